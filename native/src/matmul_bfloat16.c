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
 * products could not make it faster. Each instruction-set variant of the addon (binding.gyp)
 * has its own vector width, and with it its own lane count in the order below.
 *
 * Summation order: every C entry is summed in one fixed order whatever m is, so a row of A
 * gives the same bits multiplied alone (a decode step) or among many rows (scoring):
 *  - B [n×k] (transposeB, y = x·Wᵀ): VECTOR_WIDTH lane sums over k in steps of VECTOR_WIDTH,
 *    the lanes added by vsum_rows' fixed tree, then the k % VECTOR_WIDTH tail in index order;
 *  - B [k×n] (dInput = dOutput·W for a frozen W): one running sum per entry, p = 0, 1, …, k−1
 *    (matmul_bfloat16_rows.c).
 * Blocking, threads and m only change which entries are computed together, never an entry's
 * order (tested in src/backend/testing/suite-matmul-bfloat16.ts, and the B [n×k] order bit
 * for bit against it written out in src/backend/native-summation-order.test.ts). On a host
 * with AMX, a product whose n is a multiple of 16 and k of 32 sums in the tiles' order instead,
 * for every m, B [n×k] (matmul_bfloat16_tiles.c) and B [k×n] (matmul_bfloat16_tiles_rows.c);
 * TEAMTR_AMX=off keeps the orders above, TEAMTR_AMX=lanes computes the tiles' on a host
 * without them.
 *
 * matmulFixedOrder is the same product with a float32 B (a LoRA adapter's factors: their
 * products must keep one order too for sampled = scored), on the same paths. A transposed B
 * shallower than a vector takes the B [k×n] path on a transposed copy, which sums each entry in
 * the same order (matmul_shallow_transposed).
 *
 * Paths for B [n×k]: with fewer than LANE_ROWS rows or LANE_COLUMNS columns, 4×4 blocks of dot
 * products here, B widened in registers as it streams (a decode step) and each block
 * prefetching its share of the next B rows; C is cut into blocks of columns, and by rows too
 * when the column blocks alone would leave a thread idle (plan_tasks). From LANE_ROWS rows,
 * the sgemm's packed register tile runs each lane's sums as a product of its own and adds
 * them by the same tree (matmul_bfloat16_lanes.c). The 4×4 blocks load a vector of A and one
 * of B for every 2 multiply-adds (the tile: 12 floats of A and 2 vectors of B for 24) and
 * reduce every entry's lanes with a shuffle tree; on SmolLM2's shapes they ran at 0.71–0.91 of
 * the float32 GEMM at 256 rows and 0.75–0.92 at 2,048, the tile at 0.84–0.96 and 0.87–1.04
 * (Qwen2.5-1.5B's 1536×8960: 0.54–0.71 against 1.00–1.19). Two threads, each against the
 * float32 product alternating in one process: scripts/bfloat16-products.mjs.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bfloat16_product.h"
#include "host.h"
#include "kernels.h"
#include "paths.h"

/* ---- B [n×k]: dot products of A rows with B rows ------------------------------------------ */

/*
 * Streamed B rows are fetched into L2 (prefetcht1), not L1, and two 4-row blocks ahead, not
 * one: a batch-1 decode step stalled on the prefetches themselves (perf put 70% of the
 * kernel's samples on them: L1's fill buffers full). SmolLM2-135M's decode products at 1 row
 * (a step's 269 MB of weights, 30 layers and the LM head, walked by the old and new code
 * alternating in one process; one thread, CPU time, medians of 150-200 pairs): L2 alone 0.98
 * of the time, then two blocks ahead 0.96 of that, the one-instruction widening
 * (bfloat16_product.h) 0.94, both 0.90; all together 0.88 (1.13x), and with few_row_columns on
 * two threads, wall time, 0.90. Four and eight blocks ahead measured the same as two; 4 rows
 * and 16 rows were 0.97 and 1.00. A block of 16 B rows for the lone row (one reduction for 16
 * entries instead of a 4×4 tile's 16 with 12 empty) ran 1.05x the time.
 */
#define PREFETCH_LOCALITY 2
#define BLOCKS_AHEAD 2

/*
 * total + Σ a[q]·b[c][q] for p ≤ q < k, one FMA at a time in index order. Written with explicit
 * fmaf and kept out of the vectorizer: GCC otherwise vectorizes such a tail in some inlined
 * copies (products rounded by vmulps, then added in order) and not in others (scalar FMAs),
 * and the two copies give different bits for the same row (found by the m-independence test).
 */
__attribute__((noinline, optimize("no-tree-vectorize"))) static float
tail_sum(float total, const float *a, const weight_rows *rows, int c, int64_t p, int64_t k) {
  for (int64_t q = p; q < k; q++) {
    float weight = weight_entry(rows, c, q);
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
static inline __attribute__((always_inline)) void
dot_block(const bfloat16_problem *g, const weight_rows *b, int64_t r0, int rows, int64_t j0,
          const bool streamed, const uint16_t *prefetch, int shares) {
  int64_t k = g->k;
  vfloat sums[4][4] = {{{0}}};
  /* 4 rows × VECTOR_WIDTH bfloat16 = 4 · 2·VECTOR_WIDTH bytes a step, over `shares`: the share
     advances by a constant, not by 4·p / shares, which compiled to a 64-bit division every
     step; without it (and with the function always inlined, so that `streamed` is a constant
     in the loop rather than a mask test) decode products of 4–16 rows ran 1.05–1.08 times as
     fast (two threads, the old and new code alternating in one process). */
  int64_t advance = 4 * VECTOR_WIDTH / shares, ahead = 0;
  int64_t p = 0;
  for (; p + VECTOR_WIDTH <= k; p += VECTOR_WIDTH, ahead += advance) {
    vfloat bv[4], av[4];
    if (streamed) {
      if (prefetch) {
        for (int line = 0; line < VECTOR_WIDTH / 8; line += shares)
          __builtin_prefetch(prefetch + ahead + line * 32, 0, PREFETCH_LOCALITY);
      }
      for (int c = 0; c < 4; c++) {
        const uint16_t *source = b->half + c * k + p;
        bv[c] = in_register(vload_bfloat16_compute(source));
      }
    } else {
      for (int c = 0; c < 4; c++) bv[c] = in_register(vload(b->single + c * k + p));
      /* The A rows stream from the L2-resident row tile: fetched 8 vectors ahead into L1, the
         product ran 1.07–1.11× as fast on an Intel Xeon (one thread, CPU time, SmolLM2's
         many-row shapes: 0.67 → 0.72 of the float32 GEMM). */
      for (int r = 0; r < rows; r++)
        __builtin_prefetch(g->a + (r0 + r) * k + p + 8 * VECTOR_WIDTH, 0, 3);
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
  if (p == k && g->beta == 0.0f) {
    /* No tail, nothing to add: a row's four entries scaled and stored together (store's product). */
    for (int r = 0; r < rows; r++) {
      quad total;
      memcpy(&total, totals + r * 4, sizeof total);
      total *= g->alpha;
      memcpy(g->c + (r0 + r) * g->n + j0, &total, sizeof total);
    }
    return;
  }
  for (int r = 0; r < rows; r++) {
    for (int c = 0; c < 4; c++) {
      float total = totals[r * 4 + c];
      /* A call only when there is a tail: the call costs about as much as a block's FMAs. */
      if (p < k) total = tail_sum(total, g->a + (r0 + r) * k, b, c, p, k);
      store(g, r0 + r, j0 + c, total);
    }
  }
}

/*
 * One entry the same way as dot_block (lane sums, the same tree, then the tail), for the
 * columns left over after blocks of 4: the tree is run on a tile whose other rows are zero.
 */
static void dot_single(const bfloat16_problem *g, const weight_rows *b, int64_t r, int64_t j) {
  int64_t k = g->k;
  vfloat tile[VECTOR_WIDTH] = {{0}};
  int64_t p = 0;
  for (; p + VECTOR_WIDTH <= k; p += VECTOR_WIDTH)
    tile[0] += vload(g->a + r * k + p) * weight_vector(b, 0, p);
  float total = vsum_rows(tile)[0];
  if (p < k) total = tail_sum(total, g->a + r * k, b, 0, p, k);
  store(g, r, j, total);
}

/* Rows of A per tile: a tile (a quarter of L2, host.c) stays in L2 while every column of the block runs over it. */
#define ROW_TILE_BYTES (host_tuning()->row_tile_bytes)

static void dots_columns(const bfloat16_problem *g, const weight_rows *block, int64_t r0,
                         int64_t r1, int64_t j0, int64_t j1, bool prefetch) {
  int64_t tile = ROW_TILE_BYTES / (g->k * (int64_t)sizeof(float));
  tile = tile < 4 ? 4 : tile - tile % 4;
  for (int64_t first = r0; first < r1; first += tile) {
    int64_t last = first + tile < r1 ? first + tile : r1;
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4) {
      weight_rows b = *block;
      if (b.half) b.half += (j - j0) * g->k;
      else b.single += (j - j0) * g->k;
      const uint16_t *next = prefetch && g->b && j + 4 + 4 * BLOCKS_AHEAD <= g->n
                                 ? g->b + (j + 4 * BLOCKS_AHEAD) * g->k
                                 : NULL;
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
      weight_rows b = *block;
      if (b.half) b.half += (j - j0) * g->k;
      else b.single += (j - j0) * g->k;
      for (int64_t r = first; r < last; r++) dot_single(g, &b, r, j);
    }
  }
}

static void dots_task(void *context, size_t index, int thread) {
  (void)thread;
  const product_tasks *tasks = context;
  const bfloat16_problem *g = tasks->problem;
  task_span span = start_task(tasks, index);
  weight_rows block = g->b ? (weight_rows){g->b + span.j0 * g->k, NULL, g->k}
                           : (weight_rows){NULL, g->b_single + span.j0 * g->k, g->k};
  dots_columns(g, &block, span.r0, span.r1, span.j0, span.j1, g->b != NULL);
}

/*
 * Columns per task with few rows: COLUMN_BLOCK, or 48 or 32 when that makes a task count the
 * threads divide. SmolLM2's 576 and 192 columns made 9 and 3 tasks of 64 for 2 threads, one
 * thread idle for the last; 12 and 4 tasks of 48 keep both streaming to the end.
 */
int64_t few_row_columns(int64_t n) {
  int64_t threads = pool_thread_count();
  for (int64_t columns = COLUMN_BLOCK; columns >= 32; columns -= 16) {
    if (chunk_count(n, columns) % threads == 0) return columns;
  }
  return COLUMN_BLOCK;
}

/* Whether a B [n×k] product runs on the packed register tile (matmul_bfloat16_lanes.c). */
static bool on_lanes(const bfloat16_problem *g) {
  return g->m >= LANE_ROWS && g->n >= LANE_COLUMNS;
}

static void matmul_bfloat16(const bfloat16_problem *g, bool transpose_b) {
  if (g->m == 0 || g->n == 0) return;
  if (g->k == 0) {
    int64_t count = g->m * g->n;
    if (g->beta == 0.0f) memset(g->c, 0, (size_t)count * sizeof(float));
    else for (int64_t i = 0; i < count; i++) g->c[i] *= g->beta;
    return;
  }
  double work = (double)g->m * g->n * g->k;
  if (g->b && bfloat16_tiles_apply(g->n, g->k) && (transpose_b || g->k <= TILES_ROWS_DEPTH)) {
    path_taken(bfloat16_tiles_compute() ? PATH_BFLOAT16_TILES : PATH_BFLOAT16_TILE_ORDER, work);
    /* The tile paths add alpha·total to C as it is: a beta other than 0 and 1 scales it first. */
    prepare_c(g, 0, g->m, 0, g->n);
    if (transpose_b) matmul_bfloat16_tiles(g);
    else matmul_bfloat16_tiles_rows(g);
    return;
  }
  if (!g->b) {
    path_taken(PATH_FIXED_ORDER, work);
  } else if (!transpose_b || g->k < VECTOR_WIDTH) {
    path_taken(PATH_BFLOAT16_ROWS, work);
  } else {
    path_taken(on_lanes(g) ? PATH_BFLOAT16_LANE_PANELS : PATH_BFLOAT16_IN_REGISTERS, work);
  }
  if (transpose_b && g->k < VECTOR_WIDTH) {
    matmul_shallow_transposed(g);
    return;
  }
  if (!transpose_b) {
    matmul_bfloat16_rows(g);
    return;
  }
  if (on_lanes(g)) {
    matmul_bfloat16_lanes(g);
    return;
  }
  bool share = (double)g->m * g->n * g->k >= PARALLEL_WORK;
  int64_t columns = g->m <= IN_PLACE_ROWS ? few_row_columns(g->n) : COLUMN_BLOCK;
  product_tasks tasks = {g, plan_tasks(g, columns, 4)};
  run_maybe_parallel(task_count(&tasks.grid), dots_task, &tasks, share);
}

/* The two products differ only in B's element type (kernels.h: exactly one B is set). */
static bfloat16_problem problem_of(const product_arguments *call) {
  bfloat16_problem problem = {call->a, call->b_bfloat16, call->b_bfloat16 ? NULL : call->b,
                              call->c, call->m, call->n, call->k, call->alpha, call->beta};
  return problem;
}

void kernel_matmul_bfloat16(const product_arguments *call) {
  bfloat16_problem problem = problem_of(call);
  matmul_bfloat16(&problem, call->transpose_b);
}

void kernel_matmul_fixed_order(const product_arguments *call) {
  bfloat16_problem problem = problem_of(call);
  matmul_bfloat16(&problem, call->transpose_b);
}
