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
 * `count` (< VECTOR_WIDTH) floats from `source` into the low lanes, zeros above; and back
 * (AVX-512: masked moves, which touch no memory past `count`).
 */
#if VECTOR_WIDTH == 16
#include <immintrin.h>
static inline vfloat vload_partial(const float *source, int count) {
  return (vfloat)_mm512_maskz_loadu_ps((__mmask16)((1u << count) - 1), source);
}

static inline void vstore_partial(float *target, vfloat value, int count) {
  _mm512_mask_storeu_ps(target, (__mmask16)((1u << count) - 1), (__m512)value);
}
#else
static inline vfloat vload_partial(const float *source, int count) {
  vfloat value = {0};
  for (int lane = 0; lane < count; lane++) value[lane] = source[lane];
  return value;
}

static inline void vstore_partial(float *target, vfloat value, int count) {
  for (int lane = 0; lane < count; lane++) target[lane] = value[lane];
}
#endif

/*
 * The last columns (fewer than one vector) of rows r0..r0+row_count, in the low lanes of one
 * vector per row: each entry is the same single FMA chain over p as `block` and the scalar loop
 * before it sum it (a lane of a vector FMA rounds as fmaf does), so a row's bits do not depend
 * on the rows beside it. B's partial rows are gathered lane by lane: a full vector load could
 * read past the caller's array. The scalar loop this replaces ran a LoRA factor's gradient
 * (C [m × 8] = dY [m × 576] · B [576 × 8]) at 1 GFLOP/s in a team stage.
 */
static inline __attribute__((always_inline)) void partial_block(const small_gemm *g, int64_t r0,
                                                                int row_count, int64_t j0,
                                                                int count) {
  vfloat accumulator[ROWS] = {{0}};
  const float *a = g->a + r0 * g->a_row_stride;
  for (int64_t p = 0; p < g->depth; p++) {
    vfloat b = vload_partial(g->b + p * g->b_stride + j0, count);
    const float *a_column = a + p * g->a_depth_stride;
#pragma GCC unroll 8
    for (int r = 0; r < ROWS; r++) {
      if (r >= row_count) break;
      accumulator[r] += vbroadcast(a_column[r * g->a_row_stride]) * b;
    }
  }
  for (int r = 0; r < row_count; r++) {
    float *c = g->c + (r0 + r) * g->c_stride + j0;
    vfloat value = accumulator[r] * g->alpha;
    if (g->accumulate) value += vload_partial(c, count);
    vstore_partial(c, value, count);
  }
}

static void partial_columns(const small_gemm *g, int64_t j0) {
  int count = (int)(g->columns - j0);
  int64_t r0 = 0;
  for (; r0 + ROWS <= g->rows; r0 += ROWS) partial_block(g, r0, ROWS, j0, count);
  switch (g->rows - r0) {
#if ROWS == 8
    case 7: partial_block(g, r0, 7, j0, count); break;
    case 6: partial_block(g, r0, 6, j0, count); break;
    case 5: partial_block(g, r0, 5, j0, count); break;
    case 4: partial_block(g, r0, 4, j0, count); break;
#endif
    case 3: partial_block(g, r0, 3, j0, count); break;
    case 2: partial_block(g, r0, 2, j0, count); break;
    case 1: partial_block(g, r0, 1, j0, count); break;
    default: break;
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
  if (j0 < g->columns) partial_columns(g, j0);
}
