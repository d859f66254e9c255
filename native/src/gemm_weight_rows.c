/*
 * x·Wᵀ for a few dozen to WEIGHT_ROWS_MAX_ROWS rows (a decode step at rollout batch size, the
 * LM head of a batch of prompts): A transposed once, each weight broadcast straight from its
 * row of W. The column panels (gemm_panels.c) transpose W instead, a 16 × 16 register tile
 * per 256 weights: with few rows those shuffles are a tenth of the work, and the panel is
 * filled before it is used, so a weight matrix streamed from memory (every matrix of a decode
 * step, 0.5 GB at SmolLM2-135M's shape) is waited for slice by slice. Here the weights are
 * read as the FMAs use them, and the next 16 weight rows are prefetched one line every few
 * steps while these are multiplied.
 *
 * The sums are the GEMM kernels' own (gemm.h): each entry of C one FMA chain per 256-deep slice
 * of k, from zero, p in order, the slices added in order (to C's old value first when
 * accumulating). The chains' partial sums wait in a tile [16 columns][rows] and reach C
 * through 16 × 16 register transposes, so a row has the same bits here as in gemm_panels,
 * gemm_packed and matmul_gemm_order's in-place kernel (tested bit for bit). Only alpha = 1 and
 * beta ∈ {0, 1} (every product of the models): alpha·sum may round otherwise, and the panels
 * apply it their own way.
 *
 * Measured, one thread, CPU time, 64 rows, against the column panels on the same product:
 * 1.26× with 200 different 576 × 576 weights streamed from memory, 1.19× on the 49,152 × 576
 * LM head, 1.12× on one weight held in L2 (an Intel Xeon with AVX-512, cpuid model 207).
 */
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "parallel.h"
#include "simd.h"
#include "transpose.h"

#if VECTOR_WIDTH == 16
#include <immintrin.h>

/* Columns of C a group computes: one vector of a C row, the width of the tile's transposes. */
#define GROUP_COLUMNS 16
/* Vectors of rows in a register block (64 rows); more rows are cut into even blocks. */
#define MAX_BLOCK_VECTORS 4
/* Shallower products keep the panels: transposing A and C costs more than it saves there. */
#define WEIGHT_ROWS_MIN_DEPTH 64
/*
 * Tasks per thread: up to 8, enough for the pool to even out a descheduled thread, but at least
 * MIN_TASK_GROUPS groups a task, since a task's first group has no prefetched weights.
 */
#define MAX_TASKS_PER_THREAD 8
#define MIN_TASK_GROUPS 4

typedef struct {
  const gemm_problem *g;
  const float *at; /* Aᵀ [k][rows]: at[p·rows + i] = A[i][p], rows ≥ m zero */
  int64_t rows;    /* m rounded up to VECTOR_WIDTH */
  int64_t groups, tasks;
} weight_rows_context;

/* The weight rows of one group: 16 rows of W, `stride` floats apart. */
typedef struct {
  const float *w;
  int64_t stride;
} group_weights;

/* Software prefetches of the next group's weight rows (`lines` 64-byte lines from `next`). */
typedef struct {
  const float *next;
  int64_t lines, issued;
} line_stream;

/*
 * tile[c][i0 + i] (+)= Σ_{p in the slice} A(i0 + i, p)·W(c0 + c, p) for c < COLUMNS and
 * i < 16·VECTORS, each entry one FMA chain in p order (`first`: overwrite the tile). COLUMNS ×
 * VECTORS sums stay in registers: 16 of them (12 with three vectors), for the FMA units'
 * latency. `stream` (NULL: none) gets one prefetch every STEPS steps: the first row block's
 * passes over a group are GROUP_COLUMNS / COLUMNS × k steps, so that is k lines, the next
 * group's 16 weight rows.
 */
#define DEFINE_BLOCK(VECTORS, COLUMNS)                                                          \
  static void block_##VECTORS(const weight_rows_context *t, int64_t i0, group_weights weights,  \
                              int64_t c0, int64_t p0, int64_t depth, float *tile, bool first,   \
                              line_stream *stream) {                                            \
    enum { STEPS = GROUP_COLUMNS / (COLUMNS) };                                                 \
    vfloat sums[VECTORS][COLUMNS] = {{{0}}};                                                    \
    const float *w = weights.w + c0 * weights.stride + p0;                                     \
    const float *a = t->at + p0 * t->rows + i0;                                                 \
    int64_t issued = stream ? stream->issued : 0, lines = stream ? stream->lines : 0;           \
    int64_t p = 0;                                                                              \
    for (; p < depth; p++) {                                                                    \
      if (p % STEPS == 0 && issued < lines)                                                     \
        __builtin_prefetch(stream->next + 16 * issued++, 0, 2);                                 \
      vfloat rows[VECTORS];                                                                     \
      _Pragma("GCC unroll 4") for (int v = 0; v < (VECTORS); v++) rows[v] =                     \
          in_register(vload(a + p * t->rows + v * VECTOR_WIDTH));                               \
      _Pragma("GCC unroll 16") for (int c = 0; c < (COLUMNS); c++) {                            \
        vfloat weight = vbroadcast(w[c * weights.stride + p]);                                  \
        _Pragma("GCC unroll 4") for (int v = 0; v < (VECTORS); v++) sums[v][c] +=              \
            rows[v] * weight;                                                                   \
      }                                                                                         \
    }                                                                                           \
    if (stream) stream->issued = issued;                                                        \
    for (int c = 0; c < (COLUMNS); c++) {                                                       \
      for (int v = 0; v < (VECTORS); v++) {                                                     \
        float *target = tile + (c0 + c) * t->rows + i0 + v * VECTOR_WIDTH;                      \
        vstore(target, first ? sums[v][c] : sums[v][c] + vload(target));                        \
      }                                                                                         \
    }                                                                                           \
  }                                                                                             \
  enum { COLUMNS_OF_##VECTORS = (COLUMNS) };
DEFINE_BLOCK(1, 16)
DEFINE_BLOCK(2, 8)
DEFINE_BLOCK(3, 4)
DEFINE_BLOCK(4, 4)
#undef DEFINE_BLOCK

/* Every column block of one row block of `vectors` vectors over one slice. */
static void row_block(const weight_rows_context *t, int64_t i0, int vectors, group_weights weights,
                      int64_t p0, int64_t depth, float *tile, bool first, line_stream *stream) {
#define PASSES(V)                                                                      \
  for (int64_t c0 = 0; c0 < GROUP_COLUMNS; c0 += COLUMNS_OF_##V)                       \
    block_##V(t, i0, weights, c0, p0, depth, tile, first, stream);                     \
  return;
  switch (vectors) {
    case 1: PASSES(1)
    case 2: PASSES(2)
    case 3: PASSES(3)
    case 4: PASSES(4)
    default: abort();
  }
#undef PASSES
}

static inline __mmask16 lanes_below(int64_t count) {
  return count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1);
}

/* tile[c][i] ↔ C[i][j0 + c] for i < m, c < columns, through 16 × 16 transposes. */
static void exchange_tile(const weight_rows_context *t, int64_t j0, int64_t columns, float *tile,
                          bool to_c) {
  const gemm_problem *g = t->g;
  __mmask16 mask = lanes_below(columns);
  for (int64_t i0 = 0; i0 < g->m; i0 += VECTOR_WIDTH) {
    int64_t count = g->m - i0 < VECTOR_WIDTH ? g->m - i0 : VECTOR_WIDTH;
    vfloat block[VECTOR_WIDTH];
    if (to_c) {
      for (int c = 0; c < VECTOR_WIDTH; c++) block[c] = vload(tile + c * t->rows + i0);
      vtranspose(block); /* block[i] lane c = tile[c][i0 + i] */
      for (int64_t i = 0; i < count; i++)
        _mm512_mask_storeu_ps(g->c + (i0 + i) * g->n + j0, mask, (__m512)block[i]);
    } else {
      for (int i = 0; i < VECTOR_WIDTH; i++)
        block[i] = i < count ? (vfloat)_mm512_maskz_loadu_ps(mask, g->c + (i0 + i) * g->n + j0)
                             : (vfloat){0};
      vtranspose(block); /* block[c] lane i = C[i0 + i][j0 + c] */
      for (int c = 0; c < VECTOR_WIDTH; c++) vstore(tile + c * t->rows + i0, block[c]);
    }
  }
}

/*
 * The weights of the group at column j0: W's own rows, or for a last group of fewer than 16
 * columns a copy padded with zero rows (`spare`, 16·k floats), so every block is whole.
 */
static group_weights weights_of(const gemm_problem *g, int64_t j0, int64_t columns,
                                float *spare) {
  if (columns == GROUP_COLUMNS) return (group_weights){g->b + j0 * g->k, g->k};
  memcpy(spare, g->b + j0 * g->k, (size_t)(columns * g->k) * sizeof(float));
  memset(spare + columns * g->k, 0, (size_t)((GROUP_COLUMNS - columns) * g->k) * sizeof(float));
  return (group_weights){spare, g->k};
}

/*
 * One group of columns [j0, j0 + columns): slice by slice, its row blocks (the rows cut into
 * blocks of at most MAX_BLOCK_VECTORS vectors, as even as they go), then into C.
 */
static void group(const weight_rows_context *t, int64_t j0, int64_t columns, float *tile,
                  float *spare, line_stream *stream) {
  const gemm_problem *g = t->g;
  bool accumulate = g->beta != 0.0f;
  if (accumulate) exchange_tile(t, j0, columns, tile, false);
  group_weights weights = weights_of(g, j0, columns, spare);
  int64_t vectors = t->rows / VECTOR_WIDTH;
  int64_t blocks = chunk_count(vectors, MAX_BLOCK_VECTORS);
  for (int64_t p0 = 0; p0 < g->k; p0 += GEMM_SLICE_DEPTH) {
    int64_t depth = g->k - p0 < GEMM_SLICE_DEPTH ? g->k - p0 : GEMM_SLICE_DEPTH;
    int64_t v0 = 0;
    for (int64_t b = 0; b < blocks; b++) {
      int64_t count = (vectors - v0) / (blocks - b);
      row_block(t, v0 * VECTOR_WIDTH, (int)count, weights, p0, depth, tile,
                p0 == 0 && !accumulate, b == 0 ? stream : NULL);
      v0 += count;
    }
  }
  exchange_tile(t, j0, columns, tile, true);
}

static void weight_rows_task(void *context, size_t index, int thread) {
  const weight_rows_context *t = context;
  const gemm_problem *g = t->g;
  float *tile = pool_scratch(thread, 0, (size_t)(GROUP_COLUMNS * t->rows) * sizeof(float));
  float *spare = g->n % GROUP_COLUMNS
                     ? pool_scratch(thread, 4, (size_t)(GROUP_COLUMNS * g->k) * sizeof(float))
                     : NULL;
  if (!tile || (g->n % GROUP_COLUMNS && !spare)) abort();
  /* Groups split as evenly as they go: the first groups % tasks tasks take one more. */
  int64_t base = t->groups / t->tasks, extra = t->groups % t->tasks, i = (int64_t)index;
  int64_t first = i * base + (i < extra ? i : extra);
  int64_t last = first + base + (i < extra ? 1 : 0);
  for (int64_t group_index = first; group_index < last; group_index++) {
    int64_t j0 = group_index * GROUP_COLUMNS;
    int64_t columns = g->n - j0 < GROUP_COLUMNS ? g->n - j0 : GROUP_COLUMNS;
    /* The next group of this task: its weight rows are one contiguous run. */
    int64_t after = g->n - j0 - columns;
    int64_t next_columns =
        group_index + 1 < last ? (after < GROUP_COLUMNS ? after : GROUP_COLUMNS) : 0;
    line_stream stream = {g->b + (j0 + columns) * g->k, (next_columns * g->k + 15) / 16, 0};
    group(t, j0, columns, tile, spare, &stream);
  }
}

bool gemm_weight_rows_applies(const gemm_problem *g) {
  return !g->transpose_a && g->transpose_b && g->alpha == 1.0f &&
         (g->beta == 0.0f || g->beta == 1.0f) && g->m >= WEIGHT_ROWS_MIN_ROWS &&
         g->m <= WEIGHT_ROWS_MAX_ROWS && g->k >= WEIGHT_ROWS_MIN_DEPTH &&
         g->n >= GROUP_COLUMNS;
}

void gemm_weight_rows(const gemm_problem *g, bool parallel) {
  int64_t rows = chunk_count(g->m, VECTOR_WIDTH) * VECTOR_WIDTH;
  /* Slot 3: the calling thread's buffer its workers read (threadpool.h). */
  float *at = pool_scratch(0, 3, (size_t)(rows * g->k) * sizeof(float));
  if (!at) abort();
  transpose_rows(g->a, g->k, g->m, g->k, at, rows);
  int64_t groups = chunk_count(g->n, GROUP_COLUMNS);
  int64_t threads = parallel ? pool_thread_count() : 1;
  int64_t per_thread = groups / (MIN_TASK_GROUPS * threads);
  per_thread = per_thread < 1 ? 1 : per_thread > MAX_TASKS_PER_THREAD ? MAX_TASKS_PER_THREAD
                                                                        : per_thread;
  int64_t tasks = threads * per_thread < groups ? threads * per_thread : groups;
  weight_rows_context context = {g, at, rows, groups, tasks};
  run_maybe_parallel((size_t)tasks, weight_rows_task, &context,
                     parallel && (double)g->m * g->n * g->k >= 200000.0);
}

#else

/* Narrower vectors keep the column panels' or packed kernel (gemm_own). */
bool gemm_weight_rows_applies(const gemm_problem *g) {
  (void)g;
  return false;
}

void gemm_weight_rows(const gemm_problem *g, bool parallel) {
  (void)g;
  (void)parallel;
  abort(); /* never called: gemm_weight_rows_applies is false */
}

#endif
