/*
 * The bfloat16-weight product with B [k×n] (matmul_bfloat16.c says why bfloat16 and how B is
 * widened): dInput = dOutput·W for a frozen W [out, in], and a LoRA up-projection's transposed
 * factor on a copy. Each entry of C is one running sum, p = 0, 1, …, k−1, whatever m is (on
 * AMX hosts, shapes the tiles take sum in their order instead: matmul_bfloat16_tiles_rows.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bfloat16_product.h"

/* ---- B [k×n]: rows of B run along C's columns --------------------------------------------- */

#define ROW_VECTORS 4

/*
 * Depth per pass: a pass's slice of B's column block (256 × 64 floats, 64 KB widened) stays in
 * cache while every row of A runs over it; without it a long k (the tied LM head's backward,
 * k = 49,152) streams a 12 MB panel from L3 for every 4 rows.
 */
#define DEPTH_BLOCK 256
/*
 * Rows of A per block: 6 × ROW_VECTORS accumulators (24 of AVX-512's 32 registers), so each B
 * vector loaded from the panel serves six FMAs; 4 rows ran 3-6% slower on SmolLM2's shapes.
 */
#define BLOCK_ROWS 6

/*
 * partial[r − r0][column..column+4·VECTOR_WIDTH) += Σ_{q < depth} A(r, p0 + q)·B(q, ·) for rows
 * r0..r0+rows (rows ≤ BLOCK_ROWS), one FMA per q in order. The running sums go through `partial` between passes,
 * which is exact (a float stored and loaded back is the same float), so each entry is summed
 * p = 0, 1, …, k−1 however the depth is split.
 */
static inline __attribute__((always_inline)) void
axpy_block(const bfloat16_problem *g, const weight_rows *b, int64_t r0, int rows, int64_t column,
           int64_t p0, int64_t depth, float *partial, int64_t width) {
  vfloat sums[BLOCK_ROWS][ROW_VECTORS] = {{{0}}};
  for (int r = 0; r < rows; r++) {
    for (int v = 0; v < ROW_VECTORS; v++)
      sums[r][v] = vload(partial + r * width + column + v * VECTOR_WIDTH);
  }
  const float *a = g->a + r0 * g->k + p0;
  for (int64_t q = 0; q < depth; q++) {
    vfloat bv[ROW_VECTORS];
    for (int v = 0; v < ROW_VECTORS; v++)
      bv[v] = in_register(weight_vector(b, q, column + v * VECTOR_WIDTH));
#pragma GCC unroll 6
    for (int r = 0; r < BLOCK_ROWS; r++) {
      if (r >= rows) break;
      vfloat av = vbroadcast(a[r * g->k + q]);
      for (int v = 0; v < ROW_VECTORS; v++) sums[r][v] += av * bv[v];
    }
  }
  for (int r = 0; r < rows; r++) {
    for (int v = 0; v < ROW_VECTORS; v++)
      vstore(partial + r * width + column + v * VECTOR_WIDTH, sums[r][v]);
  }
}

/*
 * axpy_block on BLOCK_ROWS rows of a float32 B (the widened scratch, or matmulFixedOrder's),
 * both known here: with the row count
 * and B's kind left to the loop (a test per row and a branch per step), the many-row product
 * ran at 0.71–0.87 of the float32 GEMM on SmolLM2's shapes; compiled for them, 0.92–1.10
 * (one thread, same process, 512 rows).
 */
static void axpy_whole_block(const bfloat16_problem *g, const float *single, int64_t stride,
                             int64_t r0, int64_t column, int64_t p0, int64_t depth, float *partial,
                             int64_t width) {
  weight_rows b = {NULL, single, stride};
  axpy_block(g, &b, r0, BLOCK_ROWS, column, p0, depth, partial, width);
}

/*
 * C's row r, columns [j0, j0 + width) (a whole number of vectors), from the running sums as
 * store() writes each entry, a vector at a time.
 */
static void store_row(const bfloat16_problem *g, int64_t r, int64_t j0, const float *sums,
                      int64_t width) {
  float *target = g->c + r * g->n + j0;
  for (int64_t column = 0; column < width; column += VECTOR_WIDTH)
    store_vector(g, target + column, vload(sums + column));
}

/* One entry as axpy_block sums it: one FMA per p, in order (see tail_sum on the vectorizer). */
__attribute__((noinline, optimize("no-tree-vectorize"))) static void
axpy_single(const bfloat16_problem *g, int64_t r, int64_t j) {
  float total = 0;
  for (int64_t p = 0; p < g->k; p++)
    total = __builtin_fmaf(g->a[r * g->k + p], b_entry(g, p * g->n + j), total);
  store(g, r, j, total);
}

/*
 * Columns per task of the B [k×n] product: with many rows, 256, so that each depth slice of A
 * (read from memory: the LM head's backward has A = 512 × 49,152 floats) serves four column
 * groups from L1 instead of one, and A is streamed n / 256 times rather than n / 64.
 */
#define ROWS_COLUMN_BLOCK 256

/*
 * Columns per task: with few rows COLUMN_BLOCK; with many, up to ROWS_COLUMN_BLOCK, the
 * columns shared evenly between the tasks in whole blocks of ROW_VECTORS vectors (n = 576 as
 * 3 × 192, not 256 + 256 + 64, which kept one of two threads idle a tenth of the time).
 */
static int64_t rows_column_block(const bfloat16_problem *g) {
  if (g->m <= IN_PLACE_ROWS) return COLUMN_BLOCK;
  int64_t unit = ROW_VECTORS * VECTOR_WIDTH;
  int64_t units = chunk_count(g->n, unit);
  return chunk_count(units, chunk_count(units, ROWS_COLUMN_BLOCK / unit)) * unit;
}

static void rows_task(void *context, size_t index, int thread) {
  const product_tasks *tasks = context;
  const bfloat16_problem *g = tasks->problem;
  task_span span = start_task(tasks, index);
  int64_t r0 = span.r0, r1 = span.r1, j0 = span.j0, j1 = span.j1;
  int64_t width = (j1 - j0) / (ROW_VECTORS * VECTOR_WIDTH) * (ROW_VECTORS * VECTOR_WIDTH);
  if (width > 0) {
    /* The thread's kept scratch, not malloc: freeing a few hundred KB per task gave its pages
       back to the system, and every task faulted them in again. */
    size_t partial_bytes = (size_t)((r1 - r0) * width) * sizeof(float);
    float *partial = pool_scratch(thread, 4, partial_bytes);
    /* Many rows: widen each depth slice once instead of once per 4 rows. */
    bool widened = g->b && g->m > IN_PLACE_ROWS;
    float *scratch =
        widened ? pool_scratch(thread, 0, (size_t)(DEPTH_BLOCK * width) * sizeof(float)) : NULL;
    if (!partial || (widened && !scratch)) abort();
    memset(partial, 0, partial_bytes);
    for (int64_t p0 = 0; p0 < g->k; p0 += DEPTH_BLOCK) {
      int64_t depth = g->k - p0 < DEPTH_BLOCK ? g->k - p0 : DEPTH_BLOCK;
      weight_rows panel = g->b ? (weight_rows){g->b + p0 * g->n + j0, NULL, g->n}
                             : (weight_rows){NULL, g->b_single + p0 * g->n + j0, g->n};
      if (scratch) {
        for (int64_t q = 0; q < depth; q++) {
          for (int64_t column = 0; column < width; column++)
            scratch[q * width + column] = widen(g->b[(p0 + q) * g->n + j0 + column]);
        }
        panel = (weight_rows){NULL, scratch, width};
      }
      for (int64_t r = r0; r < r1; r += BLOCK_ROWS) {
        int rows = r1 - r < BLOCK_ROWS ? (int)(r1 - r) : BLOCK_ROWS;
        float *sums = partial + (r - r0) * width;
        for (int64_t column = 0; column < width; column += ROW_VECTORS * VECTOR_WIDTH) {
          if (rows == BLOCK_ROWS && panel.single)
            axpy_whole_block(g, panel.single, panel.stride, r, column, p0, depth, sums, width);
          else
            axpy_block(g, &panel, r, rows, column, p0, depth, sums, width);
        }
      }
    }
    for (int64_t r = r0; r < r1; r++) store_row(g, r, j0, partial + (r - r0) * width, width);
  }
  for (int64_t j = j0 + width; j < j1; j++) {
    for (int64_t r = r0; r < r1; r++) axpy_single(g, r, j);
  }
}

void matmul_bfloat16_rows(const bfloat16_problem *g) {
  bool share = (double)g->m * g->n * g->k >= PARALLEL_WORK;
  product_tasks tasks = {g, plan_tasks(g, rows_column_block(g), BLOCK_ROWS)};
  run_maybe_parallel(task_count(&tasks.grid), rows_task, &tasks, share);
}

/*
 * A transposed B shallower than a vector (a LoRA adapter's up-projection: k = rank) has no lane
 * sums: each entry is the tail alone, one FMA per p in order from 0, which is exactly how the
 * B [k×n] path sums it. So B is transposed into a float32 [k×n] copy and that path runs,
 * vectorized along columns, instead of one scalar chain per entry. Same bits, either way.
 */
void matmul_shallow_transposed(const bfloat16_problem *g) {
  float *copy = pool_scratch(0, 3, (size_t)(g->k * g->n) * sizeof(float));
  if (!copy) abort();
  for (int64_t j = 0; j < g->n; j++) {
    for (int64_t p = 0; p < g->k; p++) copy[p * g->n + j] = b_entry(g, j * g->k + p);
  }
  bfloat16_problem rows = *g;
  rows.b = NULL;
  rows.b_single = copy;
  matmul_bfloat16_rows(&rows);
}
