/*
 * Matrix-multiply building blocks shared by matmul and attention.
 *
 * gemm_packed: a cache-blocked, packed, multi-threaded C = alpha·op(A)·op(B) + beta·C (the
 * portable sgemm, also used when it beats the BLAS). gemm_small: an unpacked register-blocked
 * kernel for the small products inside attention, run by one thread on operands that already
 * sit in cache.
 */
#ifndef TEAMTR_GEMM_H
#define TEAMTR_GEMM_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  const float *a, *b;
  float *c;
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  float alpha, beta;
} gemm_problem;

/* The same product by column panels without packing A (gemm_panels.c); k must be > 0. */
void gemm_panels(const gemm_problem *problem, bool parallel);

/* Runs one (unbatched) product on the thread pool. */
void gemm_packed(const gemm_problem *problem);
/* The same, on the calling thread only (for callers that parallelize over batches). */
void gemm_packed_single_thread(const gemm_problem *problem);

/*
 * C[r, j] (+)= alpha · Σ_p A(r, p)·B[p, j] for r < rows, j < columns, p < depth, where
 * A(r, p) = a[r·a_row_stride + p·a_depth_stride] (so either layout of A works),
 * B rows are contiguous with stride b_stride, C rows have stride c_stride.
 * accumulate = false overwrites C.
 */
typedef struct {
  int64_t rows, columns, depth;
  const float *a;
  int64_t a_row_stride, a_depth_stride;
  const float *b;
  int64_t b_stride;
  float *c;
  int64_t c_stride;
  float alpha;
  bool accumulate;
} small_gemm;

void gemm_small(const small_gemm *problem);

#endif
