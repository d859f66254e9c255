/*
 * C = alpha·A·op(B) + beta·C with A float32 and B bfloat16: frozen weights kept in half the
 * bytes. Decoding one token reads every weight once (SmolLM2-135M: 538 MB in float32), so it
 * is bound by memory bandwidth and halving the bytes is what makes it faster.
 *
 * Numerics: a bfloat16 is the upper half of a float32, so widening (a 16-bit shift) is exact and
 * every product here is the float32 product of A with B's widened values, accumulated with
 * float32 FMAs. AVX512-BF16's vdpbf16ps would also round A to bfloat16 (not exact, and A is
 * the activations); it is not used: widening in registers costs two cheap instructions per 16
 * weights, and batch-1 decoding is waiting on memory, not on arithmetic: over SmolLM2-135M's
 * matrices at m = 1, one thread, this kernel read its bytes at the same rate as the float32
 * one (11.0 against 10.1 GB/s, on a loaded machine), so it took half the time; bfloat16 dot
 * products could not make it faster. The addon is built with -march=native on the machine that runs it,
 * so the vector width is the build machine's; no runtime dispatch is needed for this path.
 *
 * Summation order: every C entry is summed in one fixed order whatever m is, so a row of A
 * gives the same bits multiplied alone (a decode step) or among many rows (scoring):
 *  - B [n×k] (transposeB, y = x·Wᵀ): VECTOR_WIDTH lane sums over k in steps of VECTOR_WIDTH,
 *    the lanes added by vsum_rows' fixed tree, then the k % VECTOR_WIDTH tail in index order;
 *  - B [k×n] (dInput = dOutput·W for a frozen W): one running sum per entry, p = 0, 1, …, k−1.
 * Blocking, threads and m only change which entries are computed together, never an entry's
 * order (tested in src/backend/testing/suite-matmul-bfloat16.ts).
 *
 * matmulFixedOrder is the same product with a float32 B (a LoRA adapter's factors: their
 * products must keep one order too for sampled = scored); it reads B in place on every path.
 * A transposed B shallower than a vector takes the B [k×n] path on a transposed copy, which
 * sums each entry in the same order (matmul_shallow_transposed).
 *
 * Work is split over blocks of columns of C, each computed by one task: B is read once. With
 * few rows B is widened in registers as it streams; with more (prefill, scoring, backward)
 * each task widens its block of B (by depth slices for B [k×n]) into float32 scratch and
 * reuses it for every row. Measured against the float32 kernels in one process: batch-1
 * decode products 2.0–2.2× as fast, 32–256 rows 0.96–1.3×, the tied LM head's backward 1.5×.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "addon.h"
#include "arguments.h"
#include "parallel.h"
#include "simd.h"

#define COLUMN_BLOCK 64
/* Up to this many rows, widening B in registers per 4-row block costs less than a scratch copy. */
#define IN_PLACE_ROWS 16
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
 * thread). With one row the loop waits on memory and the split form measured 4-10% faster, so
 * that path keeps it.
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

/* B's entry at flat index `index`, as float32. */
static inline float b_entry(const bfloat16_problem *g, int64_t index) {
  return g->b ? widen(g->b[index]) : g->b_single[index];
}

/* Same trick as matmul_skinny.c: keeps a loaded vector in a register instead of re-loading it. */
static inline vfloat in_register(vfloat value) {
  __asm__("" : "+v"(value));
  return value;
}

static inline void store(const bfloat16_problem *g, int64_t r, int64_t j, float total) {
  float *target = g->c + r * g->n + j;
  *target = g->beta != 0.0f ? g->alpha * total + *target : g->alpha * total;
}

static void prepare_c(const bfloat16_problem *g, int64_t j0, int64_t j1) {
  if (g->beta == 0.0f || g->beta == 1.0f) return;
  for (int64_t r = 0; r < g->m; r++) {
    for (int64_t j = j0; j < j1; j++) g->c[r * g->n + j] *= g->beta;
  }
}

/* ---- B [n×k]: dot products of A rows with B rows ------------------------------------------ */

/*
 * B rows j0..j0+4 as either bfloat16 (streamed, widened in registers) or float32 (a task's
 * widened scratch); exactly one of the two pointers is set. Both give the same values.
 */
typedef struct {
  const uint16_t *half;
  const float *single;
  int64_t k;
} column_rows;

static inline vfloat load_row(const column_rows *rows, int c, int64_t p) {
  return rows->half ? vload_bfloat16(rows->half + c * rows->k + p)
                    : vload(rows->single + c * rows->k + p);
}

/*
 * total + Σ a[q]·b[q] for q < count, one FMA at a time in index order. Written with explicit
 * fmaf and kept out of the vectorizer: GCC otherwise vectorizes such a tail in some inlined
 * copies (products rounded by vmulps, then added in order) and not in others (scalar FMAs),
 * and the two copies give different bits for the same row (found by the m-independence test).
 */
__attribute__((noinline, optimize("no-tree-vectorize"))) static float
tail_sum(float total, const float *a, const column_rows *rows, int c, int64_t p) {
  for (int64_t q = p; q < rows->k; q++) {
    float weight = rows->half ? widen(rows->half[c * rows->k + q]) : rows->single[c * rows->k + q];
    total = __builtin_fmaf(a[q], weight, total);
  }
  return total;
}

/*
 * C[r0..r0+rows, j0..j0+4): 4 B rows × up to 4 A rows reduced together in registers.
 * `streamed`, a constant at every call: B is bfloat16 read in place (few rows of A), else the
 * task's widened float32 scratch. Separate copies of the loop for the two: one loop with both
 * (a branch on the pointer) ran the scratch path (prefill, scoring) 6-15% slower once the
 * streamed side gained its prefetch shares. `prefetch` (streamed only): this block's share of
 * the next block's 4 B rows, fetched while it computes; `shares` blocks split them.
 */
static inline void dot_block(const bfloat16_problem *g, const column_rows *b, int64_t r0,
                             int rows, int64_t j0, const bool streamed, const uint16_t *prefetch,
                             int shares) {
  int64_t k = g->k;
  vfloat sums[4][4] = {{{0}}};
  int64_t p = 0;
  for (; p + VECTOR_WIDTH <= k; p += VECTOR_WIDTH) {
    vfloat bv[4], av[4];
    if (streamed) {
      if (prefetch) {
        /* 4 rows × VECTOR_WIDTH bfloat16 = 4 · 2·VECTOR_WIDTH bytes a step, over `shares`. */
        for (int line = 0; line < VECTOR_WIDTH / 8; line += shares)
          __builtin_prefetch(prefetch + 4 * p / shares + line * 32);
      }
      for (int c = 0; c < 4; c++) {
        const uint16_t *source = b->half + c * k + p;
        bv[c] = in_register(rows > 1 ? vload_bfloat16_compute(source) : vload_bfloat16(source));
      }
    } else {
      for (int c = 0; c < 4; c++) bv[c] = in_register(vload(b->single + c * k + p));
    }
    for (int r = 0; r < rows; r++) av[r] = in_register(vload(g->a + (r0 + r) * k + p));
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
      if (r >= rows) break;
      for (int c = 0; c < 4; c++) sums[r][c] += av[r] * bv[c];
    }
  }
  float totals[16];
  for (int group = 0; group < 16; group += VECTOR_WIDTH) {
    vfloat tile[VECTOR_WIDTH];
    for (int i = 0; i < VECTOR_WIDTH; i++) tile[i] = sums[(group + i) / 4][(group + i) % 4];
    vstore(totals + group, vsum_rows(tile));
  }
  for (int r = 0; r < rows; r++) {
    for (int c = 0; c < 4; c++) {
      float total = totals[r * 4 + c];
      /* A call only when there is a tail: the call costs about as much as a block's FMAs. */
      if (p < k) total = tail_sum(total, g->a + (r0 + r) * k, b, c, p);
      store(g, r0 + r, j0 + c, total);
    }
  }
}

/*
 * One entry the same way as dot_block (lane sums, the same tree, then the tail), for the
 * columns left over after blocks of 4: the tree is run on a tile whose other rows are zero.
 */
static void dot_single(const bfloat16_problem *g, const column_rows *b, int64_t r, int64_t j) {
  int64_t k = g->k;
  vfloat tile[VECTOR_WIDTH] = {{0}};
  int64_t p = 0;
  for (; p + VECTOR_WIDTH <= k; p += VECTOR_WIDTH)
    tile[0] += vload(g->a + r * k + p) * load_row(b, 0, p);
  float total = vsum_rows(tile)[0];
  if (p < k) total = tail_sum(total, g->a + r * k, b, 0, p);
  store(g, r, j, total);
}

/* Rows of A per tile: a tile (≤ 192 KB) stays in L2 while every column of the block runs over it. */
#define ROW_TILE_BYTES (192 * 1024)

static void dots_columns(const bfloat16_problem *g, const column_rows *block, int64_t j0,
                         int64_t j1, bool prefetch) {
  int64_t tile = ROW_TILE_BYTES / (g->k * (int64_t)sizeof(float));
  tile = tile < 4 ? 4 : tile - tile % 4;
  for (int64_t first = 0; first < g->m; first += tile) {
    int64_t last = first + tile < g->m ? first + tile : g->m;
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4) {
      column_rows b = *block;
      if (b.half) b.half += (j - j0) * g->k;
      else b.single += (j - j0) * g->k;
      const uint16_t *next = prefetch && g->b && j + 8 <= g->n ? g->b + (j + 4) * g->k : NULL;
      /* Every row block fetches its share of the next B rows, so that memory streams while
         all of them compute, not during the first alone. */
      int shares = (int)((last - first + 3) / 4);
      int64_t share = 4 * g->k / shares;
      if (b.half) {
        int64_t r = first;
        for (; r + 4 <= last; r += 4)
          dot_block(g, &b, r, 4, j, true, next ? next + (r - first) / 4 * share : NULL, shares);
        const uint16_t *last_share = next ? next + (r - first) / 4 * share : NULL;
        switch (last - r) {
          case 3: dot_block(g, &b, r, 3, j, true, last_share, shares); break;
          case 2: dot_block(g, &b, r, 2, j, true, last_share, shares); break;
          case 1: dot_block(g, &b, r, 1, j, true, last_share, shares); break;
          default: break;
        }
        continue;
      }
      int64_t r = first;
      for (; r + 4 <= last; r += 4) dot_block(g, &b, r, 4, j, false, NULL, 1);
      switch (last - r) {
        case 3: dot_block(g, &b, r, 3, j, false, NULL, 1); break;
        case 2: dot_block(g, &b, r, 2, j, false, NULL, 1); break;
        case 1: dot_block(g, &b, r, 1, j, false, NULL, 1); break;
        default: break;
      }
    }
    for (; j < j1; j++) {
      column_rows b = *block;
      if (b.half) b.half += (j - j0) * g->k;
      else b.single += (j - j0) * g->k;
      for (int64_t r = first; r < last; r++) dot_single(g, &b, r, j);
    }
  }
}

static void dots_task(void *context, size_t index, int thread) {
  (void)thread;
  const bfloat16_problem *g = context;
  int64_t j0, j1;
  chunk_range((int64_t)index, COLUMN_BLOCK, g->n, &j0, &j1);
  prepare_c(g, j0, j1);
  if (g->b_single) {
    column_rows single = {NULL, g->b_single + j0 * g->k, g->k};
    dots_columns(g, &single, j0, j1, false);
    return;
  }
  column_rows block = {g->b + j0 * g->k, NULL, g->k};
  if (g->m <= IN_PLACE_ROWS) {
    dots_columns(g, &block, j0, j1, true);
    return;
  }
  /* Many rows: widen this block of B once; every 4-row block then reads float32. */
  int64_t count = (j1 - j0) * g->k;
  float *scratch = malloc((size_t)count * sizeof(float));
  if (!scratch) abort();
  for (int64_t i = 0; i < count; i++) scratch[i] = widen(block.half[i]);
  column_rows widened = {NULL, scratch, g->k};
  dots_columns(g, &widened, j0, j1, false);
  free(scratch);
}

/* ---- B [k×n]: rows of B run along C's columns --------------------------------------------- */

#define ROW_VECTORS 4

/*
 * B [k×n] columns j0.. as rows of `width` values with stride `stride`: bfloat16 in place (few
 * rows of A) or a task's widened float32 copy of its column block (many rows, where each B
 * vector would otherwise be widened again for every 4 rows of A).
 */
typedef struct {
  const uint16_t *half;
  const float *single;
  int64_t stride;
} row_panel;

static inline vfloat panel_vector(const row_panel *b, int64_t p, int64_t column) {
  return b->half ? vload_bfloat16(b->half + p * b->stride + column)
                 : vload(b->single + p * b->stride + column);
}

/*
 * Depth per pass: a pass's slice of B's column block (256 × 64 floats, 64 KB widened) stays in
 * cache while every row of A runs over it; without it a long k (the tied LM head's backward,
 * k = 49,152) streams a 12 MB panel from L3 for every 4 rows.
 */
#define DEPTH_BLOCK 256

/*
 * partial[r][column..column+4·VECTOR_WIDTH) += Σ_{q < depth} A(r, p0 + q)·B(q, ·) for rows
 * r0..r0+rows, one FMA per q in order. The running sums go through `partial` between passes,
 * which is exact (a float stored and loaded back is the same float), so each entry is summed
 * p = 0, 1, …, k−1 however the depth is split.
 */
static inline void axpy_block(const bfloat16_problem *g, const row_panel *b, int64_t r0,
                              int rows, int64_t column, int64_t p0, int64_t depth,
                              float *partial, int64_t width) {
  vfloat sums[4][ROW_VECTORS] = {{{0}}};
  for (int r = 0; r < rows; r++) {
    for (int v = 0; v < ROW_VECTORS; v++)
      sums[r][v] = vload(partial + (r0 + r) * width + column + v * VECTOR_WIDTH);
  }
  const float *a = g->a + r0 * g->k + p0;
  for (int64_t q = 0; q < depth; q++) {
    vfloat bv[ROW_VECTORS];
    for (int v = 0; v < ROW_VECTORS; v++)
      bv[v] = in_register(panel_vector(b, q, column + v * VECTOR_WIDTH));
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
      if (r >= rows) break;
      vfloat av = vbroadcast(a[r * g->k + q]);
      for (int v = 0; v < ROW_VECTORS; v++) sums[r][v] += av * bv[v];
    }
  }
  for (int r = 0; r < rows; r++) {
    for (int v = 0; v < ROW_VECTORS; v++)
      vstore(partial + (r0 + r) * width + column + v * VECTOR_WIDTH, sums[r][v]);
  }
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

static int64_t rows_column_block(const bfloat16_problem *g) {
  return g->m > IN_PLACE_ROWS ? ROWS_COLUMN_BLOCK : COLUMN_BLOCK;
}

static void rows_task(void *context, size_t index, int thread) {
  (void)thread;
  const bfloat16_problem *g = context;
  int64_t j0, j1;
  chunk_range((int64_t)index, rows_column_block(g), g->n, &j0, &j1);
  prepare_c(g, j0, j1);
  int64_t width = (j1 - j0) / (ROW_VECTORS * VECTOR_WIDTH) * (ROW_VECTORS * VECTOR_WIDTH);
  if (width > 0) {
    float *partial = calloc((size_t)(g->m * width), sizeof(float));
    /* Many rows: widen each depth slice once instead of once per 4 rows. */
    bool widened = g->b && g->m > IN_PLACE_ROWS;
    float *scratch = widened ? malloc((size_t)(DEPTH_BLOCK * width) * sizeof(float)) : NULL;
    if (!partial || (widened && !scratch)) abort();
    for (int64_t p0 = 0; p0 < g->k; p0 += DEPTH_BLOCK) {
      int64_t depth = g->k - p0 < DEPTH_BLOCK ? g->k - p0 : DEPTH_BLOCK;
      row_panel panel = g->b ? (row_panel){g->b + p0 * g->n + j0, NULL, g->n}
                             : (row_panel){NULL, g->b_single + p0 * g->n + j0, g->n};
      if (scratch) {
        for (int64_t q = 0; q < depth; q++) {
          for (int64_t column = 0; column < width; column++)
            scratch[q * width + column] = widen(g->b[(p0 + q) * g->n + j0 + column]);
        }
        panel = (row_panel){NULL, scratch, width};
      }
      for (int64_t r = 0; r < g->m; r += 4) {
        int rows = g->m - r < 4 ? (int)(g->m - r) : 4;
        for (int64_t column = 0; column < width; column += ROW_VECTORS * VECTOR_WIDTH)
          axpy_block(g, &panel, r, rows, column, p0, depth, partial, width);
      }
    }
    for (int64_t r = 0; r < g->m; r++) {
      for (int64_t column = 0; column < width; column++)
        store(g, r, j0 + column, partial[r * width + column]);
    }
    free(scratch);
    free(partial);
  }
  for (int64_t j = j0 + width; j < j1; j++) {
    for (int64_t r = 0; r < g->m; r++) axpy_single(g, r, j);
  }
}

/*
 * A transposed B shallower than a vector (a LoRA adapter's up-projection: k = rank) has no lane
 * sums: each entry is the tail alone, one FMA per p in order from 0, which is exactly how the
 * B [k×n] path sums it. So B is transposed into a float32 [k×n] copy and that path runs,
 * vectorized along columns, instead of one scalar chain per entry. Same bits, either way.
 */
static void matmul_shallow_transposed(const bfloat16_problem *g) {
  float *copy = malloc((size_t)(g->k * g->n) * sizeof(float));
  if (!copy) abort();
  for (int64_t j = 0; j < g->n; j++) {
    for (int64_t p = 0; p < g->k; p++) copy[p * g->n + j] = b_entry(g, j * g->k + p);
  }
  bfloat16_problem rows = *g;
  rows.b = NULL;
  rows.b_single = copy;
  bool share = (double)g->m * g->n * g->k >= PARALLEL_WORK;
  run_maybe_parallel((size_t)chunk_count(g->n, rows_column_block(&rows)), rows_task, &rows, share);
  free(copy);
}

static void matmul_bfloat16(const bfloat16_problem *g, bool transpose_b) {
  if (g->m == 0 || g->n == 0) return;
  if (g->k == 0) {
    int64_t count = g->m * g->n;
    if (g->beta == 0.0f) memset(g->c, 0, (size_t)count * sizeof(float));
    else for (int64_t i = 0; i < count; i++) g->c[i] *= g->beta;
    return;
  }
  if (transpose_b && g->k < VECTOR_WIDTH) {
    matmul_shallow_transposed(g);
    return;
  }
  bool share = (double)g->m * g->n * g->k >= PARALLEL_WORK;
  int64_t block = transpose_b ? COLUMN_BLOCK : rows_column_block(g);
  run_maybe_parallel((size_t)chunk_count(g->n, block), transpose_b ? dots_task : rows_task,
                     (void *)g, share);
}

KERNEL_ENTRY(matmul_bfloat16) {
  READ_KERNEL_ARGUMENTS(MATMUL_BFLOAT16)
  arguments_require(&args, "a", a.length, (double)m * k);
  arguments_require(&args, "b", b.length, (double)k * n);
  arguments_require(&args, "c", c.length, (double)m * n);
  if (args.failed) return NULL;
  bfloat16_problem problem = {a.data, b.data, NULL, c.data, m, n, k, (float)alpha, (float)beta};
  matmul_bfloat16(&problem, transpose_b);
  return NULL;
}

KERNEL_ENTRY(matmul_fixed_order) {
  READ_KERNEL_ARGUMENTS(MATMUL_FIXED_ORDER)
  arguments_require(&args, "a", a.length, (double)m * k);
  arguments_require(&args, "b", b.length, (double)k * n);
  arguments_require(&args, "c", c.length, (double)m * n);
  if (args.failed) return NULL;
  bfloat16_problem problem = {a.data, NULL, b.data, c.data, m, n, k, (float)alpha, (float)beta};
  matmul_bfloat16(&problem, transpose_b);
  return NULL;
}
