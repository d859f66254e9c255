/*
 * OpenBLAS, loaded at run time (dlopen) rather than linked: the addon runs without it, and the
 * library is loaded with the core type that fits the host (OpenBLAS 0.3.21 takes a Xeon of
 * cpuid model 207 for a Pentium 4, "Prescott", and runs its SSE3 kernels: 30 GFLOP/s where its
 * SkylakeX kernels reach 107). Which code runs large float32 products, ours or OpenBLAS's, is
 * chosen here too: by the host's kind, TEAMTR_SGEMM overriding it.
 */
#ifndef TEAMTR_BLAS_H
#define TEAMTR_BLAS_H

#include <stdbool.h>

#include "gemm.h"

/* cblas_sgemm's signature (row-major order = 101, no transpose = 111, transpose = 112). */
typedef void (*blas_sgemm_function)(int order, int transpose_a, int transpose_b, int m, int n,
                                    int k, float alpha, const float *a, int lda, const float *b,
                                    int ldb, float beta, float *c, int ldc);

/* The loaded library's sgemm, or NULL when OpenBLAS is not installed or TEAMTR_BLAS=none. */
blas_sgemm_function blas_sgemm(void);
/* "0.3.21", the core type it runs ("SkylakeX"), or "" when not loaded. */
const char *blas_version(void);
const char *blas_core(void);

/* Large float32 products: "own" or "openblas" (TEAMTR_SGEMM, else the host's default). */
bool sgemm_uses_blas(void);
const char *sgemm_path(void);
/* Why that path: "host default (…)" or "TEAMTR_SGEMM". */
const char *sgemm_reason(void);
/* Switches the path (benchmarks measure both in one process); false if OpenBLAS is absent. */
bool sgemm_select(bool use_blas);

/* C = op(A)·op(B) by OpenBLAS, single-threaded inside our pool's tasks. */
void blas_product(const gemm_problem *problem, bool parallel);

#endif
