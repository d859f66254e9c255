/*
 * What the AMX tile paths of the bfloat16 product share (matmul_bfloat16_tiles.c: B [n×k],
 * matmul_bfloat16_tiles_rows.c: B [k×n], matmul_bfloat16_tile_order.c: their order on lanes):
 * the tiles' shapes, the exact split of float32 values into three bfloat16 parts, and how a
 * row's three part totals become C. Included only where AVX-512 is built.
 */
#ifndef TEAMTR_BFLOAT16_TILES_H
#define TEAMTR_BFLOAT16_TILES_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bfloat16_product.h"

/* Three bfloat16 parts hold a float32's 24 significant bits. */
#define PARTS 3
#define TILE_ROWS 16
#define TILE_DEPTH 32                        /* k per tile: 16 pairs */
#define TILE_VALUES (TILE_ROWS * TILE_DEPTH) /* bfloat16 values in one packed tile */
/* A rows a tile holds: their three parts side by side, 15 of its 16 columns (or rows). */
#define BLOCK_ROWS 5
/* The most bytes of packed A a product keeps at once. */
#define PACKED_BYTES (8 << 20)
/* MXCSR: denormals are zero (bit 6), flush to zero (bit 15). */
#define DENORMALS_OFF 0x8040u

/*
 * A row's three bfloat16 parts as float32 (the tiles' exact values), part by part: the top 16
 * bits, then the top 16 bits of what is left, twice — the subtractions the tile paths' packing
 * makes, in the caller's rounding mode, before any DAZ is set.
 */
static inline void split_parts(const float *row, int64_t k, float *parts) {
  for (int64_t p = 0; p < k; p++) {
    float left = row[p];
    for (int part = 0; part < PARTS; part++) {
      uint32_t bits;
      memcpy(&bits, &left, sizeof bits);
      bits &= 0xffff0000u;
      float value;
      memcpy(&value, &bits, sizeof value);
      parts[part * k + p] = value;
      left -= value;
    }
  }
}

/*
 * Rows of A a product packs at once, a multiple of four row blocks: packed A takes 1.6 times
 * A's bytes (three bfloat16 parts, 15 of 16 columns used), so its copy stays under PACKED_BYTES
 * rather than growing with the largest A of a run (a stage scores thousands of rows at once).
 */
static inline int64_t slab_rows(int64_t k) {
  int64_t row_bytes = k / TILE_DEPTH * TILE_VALUES * (int64_t)sizeof(uint16_t) / BLOCK_ROWS;
  int64_t rows = PACKED_BYTES / row_bytes / (4 * BLOCK_ROWS) * (4 * BLOCK_ROWS);
  return rows < 4 * BLOCK_ROWS ? 4 * BLOCK_ROWS : rows;
}

/* The upper 16 bits of each float32 of two vectors, in order: 32 bfloat16 values. */
static inline __m512i upper_halves(__m512i low, __m512i high) {
  const __m512i order = _mm512_setr_epi32(
      0x00030001, 0x00070005, 0x000b0009, 0x000f000d, 0x00130011, 0x00170015, 0x001b0019,
      0x001f001d, 0x00230021, 0x00270025, 0x002b0029, 0x002f002d, 0x00330031, 0x00370035,
      0x003b0039, 0x003f003d);
  return _mm512_permutex2var_epi16(low, order, high);
}

/*
 * The next bfloat16 part of 32 float32 values held as two vectors: their top 16 bits, in
 * order, and what is left of them (exact: the difference of a float and its truncation).
 */
static inline __m512i take_part(__m512i *low, __m512i *high) {
  const __m512i keep_upper = _mm512_set1_epi32((int)0xffff0000u);
  __m512i low_part = _mm512_and_si512(*low, keep_upper);
  __m512i high_part = _mm512_and_si512(*high, keep_upper);
  *low = _mm512_castps_si512(
      _mm512_sub_ps(_mm512_castsi512_ps(*low), _mm512_castsi512_ps(low_part)));
  *high = _mm512_castps_si512(
      _mm512_sub_ps(_mm512_castsi512_ps(*high), _mm512_castsi512_ps(high_part)));
  return upper_halves(low_part, high_part);
}

/*
 * Packs row block `index` of A (BLOCK_ROWS rows) into its depth blocks' tiles at `tiles` (one
 * tile of TILE_VALUES after another), part `part` of row r as column 3r + part of 16 k-pairs
 * (`as_columns`: the right-hand tile of Cᵀ = B·Aᵀ) or as row 3r + part (the left-hand tile of
 * C = A·B); what no row fills stays 0.
 */
static inline void pack_row_block(const bfloat16_problem *g, int64_t index, int64_t depth_blocks,
                                  uint16_t *tiles, bool as_columns) {
  int64_t first = index * BLOCK_ROWS;
  int64_t rows = g->m - first < BLOCK_ROWS ? g->m - first : BLOCK_ROWS;
  memset(tiles, 0, (size_t)depth_blocks * TILE_VALUES * sizeof(uint16_t));
  /* Pair i (values 2i, 2i + 1) of a column goes to tile row i. */
  const __m512i pair_rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(TILE_ROWS));
  for (int64_t r = 0; r < rows; r++) {
    const float *row = g->a + (first + r) * g->k;
    for (int64_t block = 0; block < depth_blocks; block++) {
      __m512i low = _mm512_castps_si512(_mm512_loadu_ps(row + block * TILE_DEPTH));
      __m512i high = _mm512_castps_si512(_mm512_loadu_ps(row + block * TILE_DEPTH + 16));
      uint16_t *tile = tiles + block * TILE_VALUES;
      for (int part = 0; part < PARTS; part++) {
        __m512i values = take_part(&low, &high);
        int64_t place = PARTS * r + part;
        if (as_columns) _mm512_i32scatter_epi32((int *)tile + place, pair_rows, values, 4);
        else _mm512_storeu_si512(tile + place * TILE_DEPTH, values);
      }
    }
  }
}

/* 16 entries of C at `target` from a row's part totals: (1 + 2) + 3, then alpha·total (+ C). */
static inline void store_totals(const bfloat16_problem *g, float *target, __m512 first,
                                __m512 second, __m512 third) {
  __m512 total = _mm512_add_ps(_mm512_add_ps(first, second), third);
  __m512 alpha = _mm512_set1_ps(g->alpha);
  _mm512_storeu_ps(target, g->beta != 0.0f
                               ? _mm512_fmadd_ps(alpha, total, _mm512_loadu_ps(target))
                               : _mm512_mul_ps(alpha, total));
}

/* Sum tile `tile` through memory into C's rows of row block `row_block`, by the path's `store`. */
#define STORE_TILE(tile, store, row_block, column)                    \
  do {                                                                \
    float sums[TILE_ROWS * TILE_ROWS] __attribute__((aligned(64)));   \
    _tile_stored(tile, sums, 64);                                     \
    store(job->problem, sums, (row_block) * BLOCK_ROWS, (column));    \
  } while (0)

/*
 * `count` (1–4) row blocks against the B tile in `weights`, of depth block `block`: row block
 * i's packed A, at packed_a(i, block), loaded into tiles 6 and 7 by turns, its sums in tile i.
 * `product(sums, b, a)` orders the operands as the path's layout needs.
 */
#define ROW_BLOCKS_AGAINST(weights, block, packed_a, product) \
  do {                                                        \
    _tile_loadd(6, packed_a(0, block), 64);                   \
    product(0, weights, 6);                                   \
    if (count >= 2) _tile_loadd(7, packed_a(1, block), 64);   \
    if (count >= 2) product(1, weights, 7);                   \
    if (count >= 3) _tile_loadd(6, packed_a(2, block), 64);   \
    if (count >= 3) product(2, weights, 6);                   \
    if (count >= 4) _tile_loadd(7, packed_a(3, block), 64);   \
    if (count >= 4) product(3, weights, 7);                   \
  } while (0)

#endif
