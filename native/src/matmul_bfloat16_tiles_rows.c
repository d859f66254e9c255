/*
 * C = alpha·A·B (+ C) for a bfloat16 B [k×n] on AMX tiles (dInput = dOutput·W for a frozen W):
 * the tiles' order of matmul_bfloat16_tiles.c with B's element (p, j) in place of (j, p). Per
 * part of A's float32 values and per 32 values of k, two chains from zero over the even and the
 * odd positions, then (even + odd) into the part's total; the row's total (1 + 2) + 3. A row's
 * sums do not depend on the rows beside it, as on every path of this product.
 *
 * Layout: C = A·B directly. A's row block (5 rows) is packed as a left-hand tile per 32 values of
 * k, row 3r + part holding that part of row r; B is packed once per call into the right-hand
 * tiles' pair-interleaved layout (k-pair rows × 16 columns × 2), tile by tile so a column tile's
 * sweep over k reads one contiguous stream (B's bytes again, written in one pass). Each step
 * loads one B tile and runs up to four row blocks against it, as the B [n×k] path does.
 * TEAMTR_AMX=lanes computes the same sums on AVX-512 lanes (bfloat16_tiles_rows_lanes below),
 * where B's rows run along C's columns as they lie.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bfloat16_product.h"
#include "host.h"
#include "parallel.h"
#include "threadpool.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#include "bfloat16_tiles.h"

/* Columns of C (tiles of B) a task takes. */
#define GROUP_COLUMNS 64

typedef struct {
  const bfloat16_problem *problem;
  uint16_t *packed_a, *packed_b;
  int64_t depth_blocks, row_blocks, column_tiles;
  int64_t chunk_blocks; /* depth blocks a pass runs: four row blocks' packed A of them fits L2 */
} rows_job;

static inline uint16_t *a_tile(const rows_job *job, int64_t row_block, int64_t block) {
  return job->packed_a + (row_block * job->depth_blocks + block) * TILE_VALUES;
}

static inline uint16_t *b_tile(const rows_job *job, int64_t column_tile, int64_t block) {
  return job->packed_b + (column_tile * job->depth_blocks + block) * TILE_VALUES;
}

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16,avx512f,avx512bw")

/* A's row block `index`: row 3r + part of each depth block's tile holds part `part` of row r. */
static void pack_a_task(void *context, size_t index, int thread) {
  (void)thread;
  const rows_job *job = context;
  pack_row_block(job->problem, (int64_t)index, job->depth_blocks, a_tile(job, (int64_t)index, 0),
                 false);
}

/* B's column tile `index`: per depth block, row q holds B(2q, j) and B(2q + 1, j) in turn. */
static void pack_b_task(void *context, size_t index, int thread) {
  (void)thread;
  const rows_job *job = context;
  const bfloat16_problem *g = job->problem;
  /* Lane 2j takes the even row's value j (lane j), lane 2j + 1 the odd row's (lane 16 + j). */
  static const uint16_t interleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,
                                          21, 6, 22, 7, 23, 8,  24, 9,  25, 10, 26,
                                          11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i pairs = _mm512_loadu_si512(interleave);
  for (int64_t block = 0; block < job->depth_blocks; block++) {
    uint16_t *tile = b_tile(job, (int64_t)index, block);
    for (int q = 0; q < TILE_ROWS; q++) {
      const uint16_t *even = g->b + (block * TILE_DEPTH + 2 * q) * g->n + index * TILE_ROWS;
      __m512i both = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)even)),
          _mm256_loadu_si256((const __m256i *)(even + g->n)), 1);
      _mm512_storeu_si512(tile + q * TILE_DEPTH, _mm512_permutexvar_epi16(pairs, both));
    }
  }
}

/* Writes one C tile (rows 3r + part, 16 columns): each row's (part 1 + part 2) + part 3. */
static void store_rows(const bfloat16_problem *g, const float *sums, int64_t first_row,
                       int64_t column) {
  int64_t rows = g->m - first_row < BLOCK_ROWS ? g->m - first_row : BLOCK_ROWS;
  for (int64_t r = 0; r < rows; r++) {
    const float *part = sums + PARTS * r * TILE_ROWS;
    store_totals(g, g->c + (first_row + r) * g->n + column, _mm512_load_ps(part),
                 _mm512_load_ps(part + TILE_ROWS), _mm512_load_ps(part + 2 * TILE_ROWS));
  }
}

#define STORE_ROWS(tile, row_block, column) STORE_TILE(tile, store_rows, row_block, column)

/* C = A·B: A's tile on the left. */
#define WEIGHTS_RIGHT(sums, weights, packed) _tile_dpbf16ps(sums, packed, weights)
#define PACKED_ROWS(i, block) a_tile(job, row_block + (i), block)

/* B's tile of depth block `block` into `tile`, and `count` row blocks' A against it. */
#define ROWS_STEP(tile, block)                                   \
  do {                                                           \
    _tile_loadd(tile, b_tile(job, column_tile, block), 64);      \
    ROW_BLOCKS_AGAINST(tile, block, PACKED_ROWS, WEIGHTS_RIGHT); \
  } while (0)

/* Tile `tile`'s sums from `saved` (a depth chunk after the first) or zero. */
#define START_SUMS(tile, saved)                       \
  do {                                                \
    if (first_chunk) _tile_zero(tile);                \
    else _tile_loadd(tile, saved, 64);                \
  } while (0)

/* Tile `tile`'s sums into `saved` (a depth chunk before the last), or stored into C. */
#define END_SUMS(tile, saved, offset)                                           \
  do {                                                                          \
    if (!last_chunk) _tile_stored(tile, saved, 64);                             \
    else STORE_ROWS(tile, row_block + (offset), column_tile * TILE_ROWS);       \
  } while (0)

/*
 * `count` (1–4) row blocks from `row_block` against column tile `column_tile`, over depth
 * blocks [first, last): sums in tiles 0–3, kept in `saved` (count × 256 floats) between depth
 * chunks — a float stored and loaded back is the same float, so the order is the tiles' whole.
 */
static inline __attribute__((always_inline)) void
rows_against_tile(const rows_job *job, int64_t row_block, int count, int64_t column_tile,
                  int64_t first, int64_t last, float *saved) {
  bool first_chunk = first == 0, last_chunk = last == job->depth_blocks;
  START_SUMS(0, saved);
  if (count >= 2) START_SUMS(1, saved + 256);
  if (count >= 3) START_SUMS(2, saved + 512);
  if (count >= 4) START_SUMS(3, saved + 768);
  int64_t block = first;
  for (; block + 2 <= last; block += 2) {
    ROWS_STEP(4, block);
    ROWS_STEP(5, block + 1);
  }
  if (block < last) ROWS_STEP(4, block);
  END_SUMS(0, saved, 0);
  if (count >= 2) END_SUMS(1, saved + 256, 1);
  if (count >= 3) END_SUMS(2, saved + 512, 2);
  if (count >= 4) END_SUMS(3, saved + 768, 3);
}

/*
 * Every row block against a group of GROUP_COLUMNS / 16 column tiles, four row blocks at a time
 * and the depth in chunks whose packed A stays in L2 while the group's column tiles run over it
 * (a long k, as the tied LM head's input gradient with k = 49,152, otherwise streams all of A
 * from memory once per column tile).
 */
static void rows_task(void *context, size_t index, int thread) {
  (void)thread;
  const rows_job *job = context;
  int64_t first_tile = (int64_t)index * (GROUP_COLUMNS / TILE_ROWS);
  int64_t last_tile = first_tile + GROUP_COLUMNS / TILE_ROWS < job->column_tiles
                          ? first_tile + GROUP_COLUMNS / TILE_ROWS
                          : job->column_tiles;
  float saved[GROUP_COLUMNS / TILE_ROWS][4 * TILE_ROWS * TILE_ROWS] __attribute__((aligned(64)));
  bfloat16_tiles_configure();
  for (int64_t row_block = 0; row_block < job->row_blocks; row_block += 4) {
    int64_t count = job->row_blocks - row_block < 4 ? job->row_blocks - row_block : 4;
    for (int64_t first = 0; first < job->depth_blocks; first += job->chunk_blocks) {
      int64_t last = first + job->chunk_blocks < job->depth_blocks ? first + job->chunk_blocks
                                                                   : job->depth_blocks;
      for (int64_t tile = first_tile; tile < last_tile; tile++) {
        float *keep = saved[tile - first_tile];
        switch (count) {
          case 4: rows_against_tile(job, row_block, 4, tile, first, last, keep); break;
          case 3: rows_against_tile(job, row_block, 3, tile, first, last, keep); break;
          case 2: rows_against_tile(job, row_block, 2, tile, first, last, keep); break;
          default: rows_against_tile(job, row_block, 1, tile, first, last, keep); break;
        }
      }
    }
  }
  _tile_release();
}

#pragma GCC pop_options

/* ---- the same sums on AVX-512 lanes (TEAMTR_AMX=lanes) ------------------------------------ */

static void lanes_task(void *context, size_t index, int thread) {
  const bfloat16_problem *g = context;
  const int64_t k = g->k;
  float *parts = pool_scratch(thread, 0, (size_t)(PARTS * k) * sizeof(float));
  if (!parts) abort(); /* out of memory for three copies of a row: nothing sane to return */
  int64_t r = (int64_t)index;
  split_parts(g->a + r * k, k, parts);
  for (int64_t j = 0; j < g->n; j += TILE_ROWS) {
    unsigned int mode = _mm_getcsr();
    _mm_setcsr(mode | DENORMALS_OFF);
    __m512 totals[PARTS];
    for (int part = 0; part < PARTS; part++) {
      totals[part] = _mm512_setzero_ps();
      for (int64_t block = 0; block < k; block += TILE_DEPTH) {
        __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
        for (int64_t p = block; p < block + TILE_DEPTH; p += 2) {
          __m512 low = (__m512)vload_bfloat16_compute(g->b + p * g->n + j);
          __m512 high = (__m512)vload_bfloat16_compute(g->b + (p + 1) * g->n + j);
          even = _mm512_fmadd_ps(_mm512_set1_ps(parts[part * k + p]), low, even);
          odd = _mm512_fmadd_ps(_mm512_set1_ps(parts[part * k + p + 1]), high, odd);
        }
        totals[part] = _mm512_add_ps(totals[part], _mm512_add_ps(even, odd));
      }
    }
    _mm_setcsr(mode);
    store_totals(g, g->c + r * g->n + j, totals[0], totals[1], totals[2]);
  }
}

void matmul_bfloat16_tiles_rows(const bfloat16_problem *g) {
  bool share = (double)g->m * g->n * g->k >= PARALLEL_WORK;
  if (!bfloat16_tiles_compute()) {
    run_maybe_parallel((size_t)g->m, lanes_task, (void *)g, share && g->m > 1);
    return;
  }
  rows_job job = {.depth_blocks = g->k / TILE_DEPTH, .column_tiles = g->n / TILE_ROWS};
  size_t tile_bytes = TILE_VALUES * sizeof(uint16_t);
  job.packed_b = pool_scratch(0, 2, (size_t)(job.column_tiles * job.depth_blocks) * tile_bytes);
  if (!job.packed_b) abort(); /* out of memory for a copy of B: nothing sane to return */
  job.problem = g;
  int64_t chunk = host_tuning()->row_tile_bytes / (4 * (int64_t)tile_bytes);
  job.chunk_blocks = chunk < 2 ? 2 : chunk;
  run_maybe_parallel((size_t)job.column_tiles, pack_b_task, &job, share);
  int64_t rows = slab_rows(g->k);
  for (int64_t first = 0; first < g->m; first += rows) {
    bfloat16_problem slab = *g;
    slab.a += first * g->k;
    slab.c += first * g->n;
    slab.m = g->m - first < rows ? g->m - first : rows;
    job.problem = &slab;
    job.row_blocks = chunk_count(slab.m, BLOCK_ROWS);
    job.packed_a = pool_scratch(0, 3, (size_t)(job.row_blocks * job.depth_blocks) * tile_bytes);
    if (!job.packed_a) abort(); /* out of memory for a few MiB: nothing sane to return */
    run_maybe_parallel((size_t)job.row_blocks, pack_a_task, &job, share && job.row_blocks > 1);
    run_maybe_parallel((size_t)chunk_count(job.column_tiles, GROUP_COLUMNS / TILE_ROWS), rows_task,
                       &job, share);
  }
}

#else

void matmul_bfloat16_tiles_rows(const bfloat16_problem *g) {
  (void)g;
  abort(); /* unreachable: bfloat16_tiles_apply is false in this build */
}

#endif
