/*
 * Unpacked register-blocked product for small operands already in cache (attention's
 * per-head products, skinny matmuls): blocks of ROWS rows × 2 vectors of C are held in registers
 * while the depth loop broadcasts A entries and streams contiguous rows of B. No packing, so
 * it wins whenever the product is too small for packing to pay for itself.
 */
#include "gemm.h"
#include "simd.h"

/* Rows per register block: 8 rows × 2 vectors = 16 of AVX-512's 32 registers; 4 otherwise. */
#if VECTOR_WIDTH == 16
#define ROWS 8
#else
#define ROWS 4
#endif

/* Rows r0..r0+row_count, vector columns j0..j0+vectors·VECTOR_WIDTH. */
static inline __attribute__((always_inline)) void block(const small_gemm *g, int64_t r0, int row_count, int64_t j0, int vectors) {
  vfloat accumulator[ROWS][2] = {{{0}}};
  const float *a = g->a + r0 * g->a_row_stride;
  for (int64_t p = 0; p < g->depth; p++) {
    const float *b = g->b + p * g->b_stride + j0;
    vfloat b0 = vload(b);
    vfloat b1 = vectors == 2 ? vload(b + VECTOR_WIDTH) : (vfloat){0};
    const float *a_column = a + p * g->a_depth_stride;
#pragma GCC unroll 8
    for (int r = 0; r < ROWS; r++) {
      if (r >= row_count) break;
      vfloat a_value = vbroadcast(a_column[r * g->a_row_stride]);
      accumulator[r][0] += a_value * b0;
      if (vectors == 2) accumulator[r][1] += a_value * b1;
    }
  }
  for (int r = 0; r < row_count; r++) {
    for (int v = 0; v < vectors; v++) {
      float *c = g->c + (r0 + r) * g->c_stride + j0 + v * VECTOR_WIDTH;
      vfloat value = accumulator[r][v] * g->alpha;
      if (g->accumulate) value += vload(c);
      vstore(c, value);
    }
  }
}

/*
 * The last columns (fewer than one vector), one dot product at a time: one FMA per p in order,
 * as `block` sums each entry, kept out of the vectorizer so that every row count rounds alike
 * (attention relies on a row's result not depending on the rows beside it).
 */
__attribute__((noinline, optimize("no-tree-vectorize"))) static void
scalar_columns(const small_gemm *g, int64_t j0) {
  for (int64_t r = 0; r < g->rows; r++) {
    const float *a = g->a + r * g->a_row_stride;
    for (int64_t j = j0; j < g->columns; j++) {
      float sum = 0;
      for (int64_t p = 0; p < g->depth; p++)
        sum = __builtin_fmaf(a[p * g->a_depth_stride], g->b[p * g->b_stride + j], sum);
      float *c = g->c + r * g->c_stride + j;
      *c = g->accumulate ? *c + g->alpha * sum : g->alpha * sum;
    }
  }
}

static void column_strip(const small_gemm *g, int64_t j0, int vectors) {
  int64_t r0 = 0;
  for (; r0 + ROWS <= g->rows; r0 += ROWS) block(g, r0, ROWS, j0, vectors);
  /* The remaining rows, with the row count a constant in each call so `block` specializes. */
  switch (g->rows - r0) {
#if ROWS == 8
    case 7: block(g, r0, 7, j0, vectors); break;
    case 6: block(g, r0, 6, j0, vectors); break;
    case 5: block(g, r0, 5, j0, vectors); break;
    case 4: block(g, r0, 4, j0, vectors); break;
#endif
    case 3: block(g, r0, 3, j0, vectors); break;
    case 2: block(g, r0, 2, j0, vectors); break;
    case 1: block(g, r0, 1, j0, vectors); break;
    default: break;
  }
}

void gemm_small(const small_gemm *g) {
  int64_t j0 = 0;
  for (; j0 + 2 * VECTOR_WIDTH <= g->columns; j0 += 2 * VECTOR_WIDTH) column_strip(g, j0, 2);
  if (j0 + VECTOR_WIDTH <= g->columns) {
    column_strip(g, j0, 1);
    j0 += VECTOR_WIDTH;
  }
  if (j0 < g->columns) scalar_columns(g, j0);
}
