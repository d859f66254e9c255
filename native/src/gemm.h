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

/*
 * Depth of the k slices of gemm_panels and gemm_packed: each entry of C is summed as one FMA
 * chain per slice, the slices added to C in order. Both kernels must use the same depth, and
 * matmul_gemm_order.c sums few-row products the same way: together they give a row of C the
 * same bits whatever the number of rows (see that file).
 */
#define GEMM_SLICE_DEPTH 256

/*
 * Our own kernels for a product of any shape (k > 0): column panels (gemm_panels) or the packed
 * kernel (gemm_packed), chosen as matmul chooses them for more than a few rows (matmul.c).
 */
void gemm_own(const gemm_problem *problem, bool parallel);

/*
 * x·Wᵀ (A plain, B transposed, alpha = 1, beta 0 or 1) with WEIGHT_ROWS_MIN_ROWS to
 * WEIGHT_ROWS_MAX_ROWS rows, with 16-float vectors: A transposed once, the weights broadcast
 * from their rows (gemm_weight_rows.c). Same sums as the panels. gemm_own takes it when it
 * applies.
 */
#define WEIGHT_ROWS_MIN_ROWS 24
#define WEIGHT_ROWS_MAX_ROWS 128
bool gemm_weight_rows_applies(const gemm_problem *problem);
void gemm_weight_rows(const gemm_problem *problem, bool parallel);

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
