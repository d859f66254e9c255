/*
 * The register tile of the bfloat16-weight product with many rows (matmul_bfloat16_lanes.c):
 * the sgemm's scheme (gemm_packed.c) of a PANEL_ROWS × PANEL_COLUMNS block of C in registers,
 * fed by A [depth][PANEL_ROWS] (one broadcast per row and step; packed, or rows read in place
 * through strides) and a packed, widened B micro-panel [depth][PANEL_COLUMNS] (two vector loads
 * per step). Each accumulator lane is one entry's running sum, one multiply-add per step in
 * depth order, so the caller's packing decides which products a sum takes and in what order.
 */
#ifndef TEAMTR_BFLOAT16_PANELS_H
#define TEAMTR_BFLOAT16_PANELS_H

#include <stdint.h>
#include <string.h>

#include "bfloat16_product.h"
#include "simd.h"

#if VECTOR_WIDTH == 16
#define PANEL_ROWS 12
#else
#define PANEL_ROWS 6
#endif
#define PANEL_COLUMNS (2 * VECTOR_WIDTH)

typedef struct {
  vfloat v[PANEL_ROWS][2];
} panel_tile;

static inline void tile_zero(panel_tile *tile) {
#pragma GCC unroll 16
  for (int r = 0; r < PANEL_ROWS; r++) tile->v[r][0] = tile->v[r][1] = (vfloat){0};
}

/*
 * tile += A · b[depth][PANEL_COLUMNS], A(r, p) = a[p·step_stride + r·row_stride] (a packed
 * micro-panel [depth][PANEL_ROWS], or rows of A read in place), one step of depth at a time: each
 * entry's running sum takes `+= a·b` (a fused multiply-add wherever the build has one, as in
 * the paths' few-row kernels, which write the same expression).
 */
static inline __attribute__((always_inline)) void
tile_product_strided(panel_tile *tile, int64_t depth, const float *restrict a, int64_t row_stride,
                     int64_t step_stride, const float *restrict b) {
  for (int64_t p = 0; p < depth; p++) {
    vfloat b0 = vload(b + p * PANEL_COLUMNS), b1 = vload(b + p * PANEL_COLUMNS + VECTOR_WIDTH);
#pragma GCC unroll 16
    for (int r = 0; r < PANEL_ROWS; r++) {
      vfloat a_value = vbroadcast(a[p * step_stride + r * row_stride]);
      tile->v[r][0] += a_value * b0;
      tile->v[r][1] += a_value * b1;
    }
  }
}

/* tile += source, entry by entry. */
static inline void tile_add(panel_tile *tile, const float *source) {
#pragma GCC unroll 16
  for (int r = 0; r < PANEL_ROWS; r++) {
    tile->v[r][0] += vload(source + r * PANEL_COLUMNS);
    tile->v[r][1] += vload(source + r * PANEL_COLUMNS + VECTOR_WIDTH);
  }
}

static inline void tile_store(const panel_tile *tile, float *target) {
#pragma GCC unroll 16
  for (int r = 0; r < PANEL_ROWS; r++) {
    vstore(target + r * PANEL_COLUMNS, tile->v[r][0]);
    vstore(target + r * PANEL_COLUMNS + VECTOR_WIDTH, tile->v[r][1]);
  }
}

/*
 * The tile's sums into C's rows [r0, r0 + rows) × columns [j0, j0 + columns) as store()
 * writes each entry: alpha·total, plus C's entry (already scaled by beta) unless beta is 0.
 * Whole tiles a vector at a time, the edges of C entry by entry.
 */
static inline void tile_to_c(const panel_tile *tile, const bfloat16_problem *g, int64_t r0,
                             int rows, int64_t j0, int columns) {
  if (rows == PANEL_ROWS && columns == PANEL_COLUMNS) {
    for (int r = 0; r < PANEL_ROWS; r++) {
      for (int half = 0; half < 2; half++)
        store_vector(g, g->c + (r0 + r) * g->n + j0 + half * VECTOR_WIDTH, tile->v[r][half]);
    }
    return;
  }
  float totals[PANEL_ROWS * PANEL_COLUMNS];
  tile_store(tile, totals);
  for (int r = 0; r < rows; r++) {
    for (int j = 0; j < columns; j++) store(g, r0 + r, j0 + j, totals[r * PANEL_COLUMNS + j]);
  }
}

/*
 * Rows [r0, r0 + PANEL_ROWS) of A (row-major, `stride` floats apart; rows at or past `rows`
 * read as 0) at depths p0 + [0, VECTOR_WIDTH), transposed in registers:
 * column[q][r] = A(r0 + r, p0 + q), for groups of VECTOR_WIDTH rows at a time.
 */
static inline void transpose_panel_rows(const float *a, int64_t stride, int rows,
                                        int group_first, vfloat column[VECTOR_WIDTH]) {
  if (rows == PANEL_ROWS) {
    /* Whole panels (all but the last): no test per row. */
    for (int r = 0; r < VECTOR_WIDTH; r++) {
      int row = group_first + r;
      column[r] = row < PANEL_ROWS ? vload(a + row * stride) : (vfloat){0};
    }
  } else {
    for (int r = 0; r < VECTOR_WIDTH; r++) {
      int row = group_first + r;
      column[r] = row < PANEL_ROWS && row < rows ? vload(a + row * stride) : (vfloat){0};
    }
  }
  vtranspose(column);
}

#endif
