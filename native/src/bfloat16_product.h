/*
 * What the two paths of the product with bfloat16 weights share (matmul_bfloat16.c: B [n×k],
 * matmul_bfloat16_rows.c: B [k×n]): the problem, exact widening of bfloat16 to float32, how an
 * entry of C is stored, and how C is cut into tasks.
 */
#ifndef TEAMTR_BFLOAT16_PRODUCT_H
#define TEAMTR_BFLOAT16_PRODUCT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "parallel.h"
#include "simd.h"

/* Columns of C per task (the B [k×n] path takes more with many rows). */
#define COLUMN_BLOCK 64
/* Up to this many rows, widening B in registers per 4-row block costs less than a scratch copy. */
#define IN_PLACE_ROWS 16
/*
 * From this many rows the B [n×k] product runs on the packed register tile
 * (matmul_bfloat16_lanes.c), below it on 4×4 dot-product blocks widening B in registers: at
 * 17 rows the tile (12-row panels, two of them mostly empty) ran at 0.69–0.81 of the float32
 * GEMM against the blocks' 0.81–0.97, at 24 rows level, at 31 and more ahead (one thread,
 * SmolLM2's shapes).
 */
#define LANE_ROWS 24
/*
 * ... and from this many columns: the tile's panels are 32 columns wide, so fewer fill them
 * poorly. A LoRA factor's product through matmulFixedOrder (n = 8, k = 576) ran at 0.22–0.28
 * of the dot-product blocks' speed on the tile, n = 16 at 0.46–0.55, n = 64 at 1.15 (60 and
 * 300 rows, two threads, both in one process).
 */
#define LANE_COLUMNS 64
#define PARALLEL_WORK 200000.0

typedef uint16_t vhalf __attribute__((vector_size(VECTOR_WIDTH * sizeof(uint16_t))));
typedef uint32_t vuint __attribute__((vector_size(VECTOR_WIDTH * sizeof(uint32_t))));

/* VECTOR_WIDTH bfloat16 values widened to float32: zero-extend, shift into the upper half. */
static inline vfloat vload_bfloat16(const uint16_t *source) {
  vhalf half;
  memcpy(&half, source, sizeof half);
  return (vfloat)(__builtin_convertvector(half, vuint) << 16);
}

/*
 * The same values in fewer instructions with AVX-512: GCC splits the conversion above into
 * 256-bit halves (two loads, two extends, an insert, a shift), three times the instructions of
 * one 512-bit zero-extend and shift. That matters where several rows of A share each widened
 * vector and the loop is bound by arithmetic: 16 rows ran 1.4x as fast (same process, one
 * thread). With one row the loop waits on memory: the split form once measured 4-10% faster
 * there, but with B prefetched into L2 (matmul_bfloat16.c) this form is part of the 1.11x
 * that change gave batch-1 decode products, so every row count now takes it.
 */
static inline vfloat vload_bfloat16_compute(const uint16_t *source) {
#if VECTOR_WIDTH == 16
  __m256i half = _mm256_loadu_si256((const __m256i *)source);
  return (vfloat)_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16);
#else
  return vload_bfloat16(source);
#endif
}

static inline float widen(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &wide, sizeof value);
  return value;
}

/* B is either bfloat16 (b) or float32 (b_single, matmulFixedOrder); the other pointer is NULL. */
typedef struct {
  const float *a;
  const uint16_t *b;
  const float *b_single;
  float *c;
  int64_t m, n, k;
  float alpha, beta;
} bfloat16_problem;

/*
 * Whether a B [n×k] bfloat16 product takes the AMX tiles' order of sums on this host, and
 * whether the tiles compute it or AVX-512 lanes do (TEAMTR_AMX=lanes; matmul_bfloat16_tiles.c).
 */
bool bfloat16_tiles_apply(int64_t n, int64_t k);
bool bfloat16_tiles_compute(void);
void matmul_bfloat16_tiles(const bfloat16_problem *g);
/*
 * The same order with B [k×n] (matmul_bfloat16_tiles_rows.c), on the tiles or on lanes, up to
 * this depth: the tied LM head's input gradient (k = 49,152, 256 rows) ran at 0.9–1.0 of the
 * B [k×n] rows path on the tiles (B streamed once per four row blocks), k = 8,960 at 1.1–1.2,
 * k ≤ 1,536 at 1.3–1.6 (two threads, processes alternating TEAMTR_AMX=off).
 */
#define TILES_ROWS_DEPTH 16384
void matmul_bfloat16_tiles_rows(const bfloat16_problem *g);
/* Loads the tile configuration every tile path uses (16 rows of 64 bytes), per thread. */
void bfloat16_tiles_configure(void);
/* The tiles' sums on AVX-512 lanes (matmul_bfloat16_tile_order.c). */
void matmul_bfloat16_tile_order_lanes(const bfloat16_problem *g);
/* C columns per task with few rows: 64, or 48 or 32 when that makes a task count the threads
   divide (matmul_bfloat16.c). */
int64_t few_row_columns(int64_t n);

/* B's entry at flat index `index`, as float32. */
static inline float b_entry(const bfloat16_problem *g, int64_t index) {
  return g->b ? widen(g->b[index]) : g->b_single[index];
}

/* c + a·b rounded once, lane by lane (a fused multiply-add; per lane where the build has none). */
static inline vfloat fused_multiply_add(vfloat a, vfloat b, vfloat c) {
#if VECTOR_WIDTH == 16
  return (vfloat)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif VECTOR_WIDTH == 8 && defined(__FMA__)
  return (vfloat)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
  for (int lane = 0; lane < VECTOR_WIDTH; lane++) c[lane] = __builtin_fmaf(a[lane], b[lane], c[lane]);
  return c;
#endif
}

/*
 * C's entry from its sum: alpha·total, or with beta ≠ 0 alpha·total + C (C already scaled by
 * beta) rounded once. The fused form is written out, not left to the compiler: whether it
 * contracted `alpha·total + C` depended on the code around each copy, and the packed tile's
 * vector copy (bfloat16_panels.h) came out unfused where this one was fused — other bits for
 * the same row at 100 rows than at 1.
 */
static inline void store(const bfloat16_problem *g, int64_t r, int64_t j, float total) {
  float *target = g->c + r * g->n + j;
  *target = g->beta != 0.0f ? __builtin_fmaf(g->alpha, total, *target) : g->alpha * total;
}

/* store() for VECTOR_WIDTH entries of C at once. */
static inline void store_vector(const bfloat16_problem *g, float *target, vfloat total) {
  vfloat alpha = vbroadcast(g->alpha);
  vstore(target, g->beta != 0.0f ? fused_multiply_add(alpha, total, vload(target)) : alpha * total);
}

/*
 * A block of B, row by row: bfloat16 read in place (few rows of A) or a task's widened float32
 * copy (many rows, where each B vector would otherwise be widened again for every block of
 * rows of A); exactly one of the two pointers is set, and both give the same values. Its rows
 * are `stride` values apart: B's rows j0.. on the B [n×k] path, depths p0.. on the B [k×n] one.
 */
typedef struct {
  const uint16_t *half;
  const float *single;
  int64_t stride;
} weight_rows;

static inline vfloat weight_vector(const weight_rows *rows, int64_t row, int64_t column) {
  return rows->half ? vload_bfloat16(rows->half + row * rows->stride + column)
                    : vload(rows->single + row * rows->stride + column);
}

static inline float weight_entry(const weight_rows *rows, int64_t row, int64_t column) {
  return rows->half ? widen(rows->half[row * rows->stride + column])
                    : rows->single[row * rows->stride + column];
}

/* C's block of rows [r0, r1) × columns [j0, j1) scaled by beta, before the sums are added. */
static inline void prepare_c(const bfloat16_problem *g, int64_t r0, int64_t r1, int64_t j0,
                             int64_t j1) {
  if (g->beta == 0.0f || g->beta == 1.0f) return;
  for (int64_t r = r0; r < r1; r++) {
    for (int64_t j = j0; j < j1; j++) g->c[r * g->n + j] *= g->beta;
  }
}

/*
 * How a product's C is cut into tasks: blocks of `columns` columns, and with many rows (more
 * than IN_PLACE_ROWS) each block also cut into parts of `rows` rows when the column blocks
 * alone would leave a thread idle in the last round: the fewest parts that make a task count
 * the threads divide (tasks are of equal size but for the last column block). SmolLM2's key
 * and value projections (n = 192) made 3 column tasks for 2 threads: 0.71 of the float32
 * GEMM's speed, against 0.84 on one thread. Task t is column block t % column_tasks of row part t / column_tasks.
 * Each entry is still computed by one task, in its one order.
 */
typedef struct {
  int64_t columns, column_tasks, rows, row_tasks;
} task_grid;

/*
 * Fewest rows in a row part: below it, widening a task's B block costs too much per row. At 64
 * a 60-row backward product (a prompt's pass in a gradient step) kept 3 column tasks for 2
 * threads: 0.79 of the float32 GEMM-order kernel.
 */
#define PART_ROWS 24

/* `block_rows`: the rows of A the path's register blocks take; parts are whole blocks. */
static inline task_grid plan_tasks(const bfloat16_problem *g, int64_t columns, int64_t block_rows) {
  task_grid grid = {columns, chunk_count(g->n, columns), g->m, 1};
  if (g->m <= IN_PLACE_ROWS) return grid;
  int64_t threads = pool_thread_count();
  int64_t most = g->m / PART_ROWS > 1 ? g->m / PART_ROWS : 1;
  /* The fewest parts whose task count the threads divide (each part widens B once more). */
  int64_t parts = 1;
  while (parts < most && grid.column_tasks * parts % threads != 0) parts++;
  if (grid.column_tasks * parts % threads != 0) parts = 1;
  int64_t rows = (g->m + parts - 1) / parts;
  grid.rows = (rows + block_rows - 1) / block_rows * block_rows;
  grid.row_tasks = chunk_count(g->m, grid.rows);
  return grid;
}

static inline size_t task_count(const task_grid *grid) {
  return (size_t)(grid->column_tasks * grid->row_tasks);
}

/* A pool task's context: the problem and how it is cut. */
typedef struct {
  const bfloat16_problem *problem;
  task_grid grid;
} product_tasks;

/* The rows [r0, r1) and columns [j0, j1) of C a task computes. */
typedef struct {
  int64_t r0, r1, j0, j1;
} task_span;

/* Task `index`'s block of C, scaled by beta before the task adds its sums. */
static inline task_span start_task(const product_tasks *tasks, size_t index) {
  const task_grid *grid = &tasks->grid;
  task_span span;
  chunk_range((int64_t)index % grid->column_tasks, grid->columns, tasks->problem->n, &span.j0,
              &span.j1);
  chunk_range((int64_t)index / grid->column_tasks, grid->rows, tasks->problem->m, &span.r0,
              &span.r1);
  prepare_c(tasks->problem, span.r0, span.r1, span.j0, span.j1);
  return span;
}

/* B [k×n] (dInput = dOutput·W for a frozen W): one running sum per entry (matmul_bfloat16_rows.c). */
void matmul_bfloat16_rows(const bfloat16_problem *g);
/* B [n×k] with many rows: the lane sums on the packed register tile (matmul_bfloat16_lanes.c). */
void matmul_bfloat16_lanes(const bfloat16_problem *g);
/* A transposed B shallower than a vector, on the B [k×n] path (matmul_bfloat16_rows.c). */
void matmul_shallow_transposed(const bfloat16_problem *g);

#endif
