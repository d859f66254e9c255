/*
 * The B [n×k] (y = x·Wᵀ) bfloat16-weight product with many rows, in the order matmul_bfloat16.c
 * documents, on the packed register tile of bfloat16_panels.h.
 *
 * An entry's VECTOR_WIDTH lane sums are independent chains: lane l sums A(r, p)·B(j, p) over
 * p = l, l + W, … (W = VECTOR_WIDTH), one multiply-add each in that order. So lane l of every
 * entry is the product of two matrices, A's columns l, l + W, … with B's, and it runs on the
 * sgemm's register tile: A and B are packed lane by lane (a micro-panel holds lane 0's depths,
 * then lane 1's, …, then the k % W tail), the tile computes lane l's sums of 12 × 32 entries
 * from zero, and the lanes are added as simd.h's tree adds them: the tree pairs lane j with
 * j + W/2, then those sums with the ones W/4 apart, …, so running the lanes in bit-reversed
 * order (0, 8, 4, 12, … for 16) completes each pair right after its second half, and a stack
 * of log2(W) tiles holds the unfinished ones. Then the tail, one fused multiply-add per depth
 * in index order, and C. The same additions of the same values as the few-row kernel
 * (matmul_bfloat16.c), so a row gives the same bits however many rows are multiplied.
 *
 * Two drivers run the tiles (matmul_bfloat16_lanes at the end says which when): by panels, a
 * task widens one 32-column panel of B and runs a block of rows against it; by chunks, B's
 * panels are widened once per chunk that fits L2 and a task runs its rows against a chunk, one
 * A micro-panel at a time. A is read in place (few columns and a shallow depth,
 * reads_in_place) or packed.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bfloat16_panels.h"
#include "host.h"

/* log2(VECTOR_WIDTH): the levels of the lanes' addition tree. */
#if VECTOR_WIDTH == 16
#define TREE_LEVELS 4
#elif VECTOR_WIDTH == 8
#define TREE_LEVELS 3
#else
#define TREE_LEVELS 2
#endif

static inline int reverse_bits(int value) {
  int reversed = 0;
  for (int level = 0; level < TREE_LEVELS; level++)
    reversed |= ((value >> level) & 1) << (TREE_LEVELS - 1 - level);
  return reversed;
}

/* Where depth p of a packed micro-panel `width` wide starts: lane by lane, then the tail. */
static inline int64_t lane_offset(int64_t k, int64_t p, int width) {
  int64_t depth = k / VECTOR_WIDTH, main = depth * VECTOR_WIDTH;
  if (p >= main) return p * width;
  return ((p % VECTOR_WIDTH) * depth + p / VECTOR_WIDTH) * width;
}

/*
 * Rows [r0, r0 + rows) of A as one micro-panel, PANEL_ROWS × k (rows past `rows` are 0): for
 * each step of VECTOR_WIDTH depths, the rows' vectors transposed in registers, and each lane's
 * column of PANEL_ROWS values stored at that lane's place.
 */
static void pack_a(const bfloat16_problem *g, int64_t r0, int rows, float *target) {
  int64_t k = g->k, depth = k / VECTOR_WIDTH, main = depth * VECTOR_WIDTH;
  const float *a = g->a + r0 * k;
  int64_t lane_stride = depth * PANEL_ROWS;
  for (int64_t p = 0, step = 0; p < main; p += VECTOR_WIDTH, step++) {
    for (int first = 0; first < PANEL_ROWS; first += VECTOR_WIDTH) {
      vfloat column[VECTOR_WIDTH];
      transpose_panel_rows(a + p, k, rows, first, column);
      float *base = target + step * PANEL_ROWS + first;
      int group = PANEL_ROWS - first < VECTOR_WIDTH ? PANEL_ROWS - first : VECTOR_WIDTH;
      for (int lane = 0; lane < VECTOR_WIDTH; lane++)
        memcpy(base + lane * lane_stride, &column[lane], (size_t)group * sizeof(float));
    }
  }
  for (int64_t p = main; p < k; p++) {
    for (int r = 0; r < PANEL_ROWS; r++)
      target[p * PANEL_ROWS + r] = r < rows ? a[r * k + p] : 0.0f;
  }
}

/* B's rows (C's columns) [j0, j0 + PANEL_COLUMNS) as one widened micro-panel, k × PANEL_COLUMNS. */
static void pack_b(const bfloat16_problem *g, int64_t j0, float *target) {
  int64_t k = g->k, main = k / VECTOR_WIDTH * VECTOR_WIDTH;
  int columns = g->n - j0 < PANEL_COLUMNS ? (int)(g->n - j0) : PANEL_COLUMNS;
  for (int64_t p = 0; p < main; p += VECTOR_WIDTH) {
    for (int half = 0; half < 2; half++) {
      vfloat column[VECTOR_WIDTH];
      for (int j = 0; j < VECTOR_WIDTH; j++) {
        int c = half * VECTOR_WIDTH + j;
        int64_t index = (j0 + c) * k + p;
        column[j] = c >= columns ? (vfloat){0}
                    : g->b   ? vload_bfloat16_compute(g->b + index)
                             : vload(g->b_single + index);
      }
      vtranspose(column);
      for (int lane = 0; lane < VECTOR_WIDTH; lane++)
        vstore(target + lane_offset(k, p + lane, PANEL_COLUMNS) + half * VECTOR_WIDTH, column[lane]);
    }
  }
  for (int64_t p = main; p < k; p++) {
    for (int c = 0; c < PANEL_COLUMNS; c++)
      target[p * PANEL_COLUMNS + c] = c < columns ? b_entry(g, (j0 + c) * k + p) : 0.0f;
  }
}

/*
 * Where a micro-panel's A is read: lane l's step s of row r at
 * lanes[l·lane_stride + s·step_stride + r·row_stride], and depth main + q (the tail) at
 * tail[q·tail_step + r·row_stride]. Packed (pack_a), or A's rows in place.
 */
typedef struct {
  const float *lanes, *tail;
  int64_t lane_stride, step_stride, row_stride, tail_step;
} a_source;

/*
 * C's rows [r0, r0 + rows) × columns [j0, j0 + columns) from A and a packed B micro-panel.
 * Inlined into each caller with its A layout's strides, so the packed one's are constants.
 */
static inline __attribute__((always_inline)) void
lanes_tile(const bfloat16_problem *g, const a_source *a, const float *b, int64_t r0, int rows,
           int64_t j0, int columns) {
  int64_t depth = g->k / VECTOR_WIDTH, main = depth * VECTOR_WIDTH;
  /* Unfinished sums of the tree: level L holds the sum of 2^L lanes. */
  float stack[TREE_LEVELS][PANEL_ROWS * PANEL_COLUMNS] __attribute__((aligned(64)));
  panel_tile tile;
  for (int t = 0; t < VECTOR_WIDTH; t++) {
    int lane = reverse_bits(t);
    tile_zero(&tile);
    tile_product_strided(&tile, depth, a->lanes + lane * a->lane_stride, a->row_stride,
                         a->step_stride, b + lane * depth * PANEL_COLUMNS);
    int level = 0;
    for (int bits = t; bits & 1; bits >>= 1, level++) tile_add(&tile, stack[level]);
    if (t < VECTOR_WIDTH - 1) tile_store(&tile, stack[level]);
  }
  for (int64_t p = main; p < g->k; p++) {
    vfloat b0 = vload(b + p * PANEL_COLUMNS), b1 = vload(b + p * PANEL_COLUMNS + VECTOR_WIDTH);
    for (int r = 0; r < PANEL_ROWS; r++) {
      vfloat a_value = vbroadcast(a->tail[(p - main) * a->tail_step + r * a->row_stride]);
      tile.v[r][0] = fused_multiply_add(a_value, b0, tile.v[r][0]);
      tile.v[r][1] = fused_multiply_add(a_value, b1, tile.v[r][1]);
    }
  }
  tile_to_c(&tile, g, r0, rows, j0, columns);
}

/* lanes_tile on a packed A micro-panel (pack_a's layout). */
static void lanes_tile_packed(const bfloat16_problem *g, const float *packed, const float *b,
                              int64_t r0, int rows, int64_t j0, int columns) {
  int64_t depth = g->k / VECTOR_WIDTH;
  a_source a = {packed, packed + depth * VECTOR_WIDTH * PANEL_ROWS, depth * PANEL_ROWS,
                PANEL_ROWS, 1, PANEL_ROWS};
  lanes_tile(g, &a, b, r0, rows, j0, columns);
}

/* lanes_tile on PANEL_ROWS whole rows of A read in place (lane l of step s is column s·W + l). */
static void lanes_tile_in_place(const bfloat16_problem *g, const float *b, int64_t r0,
                                int64_t j0, int columns) {
  const float *rows = g->a + r0 * g->k;
  a_source a = {rows, rows + g->k / VECTOR_WIDTH * VECTOR_WIDTH, 1, VECTOR_WIDTH, g->k, 1};
  lanes_tile(g, &a, b, r0, PANEL_ROWS, j0, columns);
}

/* The plan by chunks: a pool job per chunk of B's panels, whose first tasks widen the next
   chunk into the other buffer and the rest each run a block of rows against this one. */
typedef struct {
  const bfloat16_problem *problem;
  float *packed_b[2];          /* even chunks' widened panels, odd chunks' */
  bool in_place;               /* whole micro-panels read from A's rows (reads_in_place) */
  int64_t a_panels, b_panels;  /* micro-panels of A, of B, in the product */
  int64_t row_blocks, block_panels; /* equal blocks of A's micro-panels, a task each */
  int64_t chunks, chunk_panels;     /* equal chunks of B's panels, each kept in L2 */
  int64_t chunk;                    /* the chunk this job runs (-1: none, only the first packed) */
  int64_t next_pack_tasks;          /* this job's tasks widening the next chunk (first) */
} lane_plan;

/* Widens B's panel `index` of chunk `chunk` into that chunk's buffer. */
static void pack_chunk_panel(const lane_plan *plan, int64_t chunk, int64_t index) {
  const bfloat16_problem *g = plan->problem;
  int64_t panel = chunk * plan->chunk_panels + index;
  pack_b(g, panel * PANEL_COLUMNS, plan->packed_b[chunk & 1] + index * g->k * PANEL_COLUMNS);
}

static int64_t chunk_panel_count(const lane_plan *plan, int64_t chunk) {
  int64_t left = chunk < plan->chunks ? plan->b_panels - chunk * plan->chunk_panels : 0;
  return left < plan->chunk_panels ? left : plan->chunk_panels;
}

/* Rows of one block against the chunk: each A micro-panel packed (or read in place) right
   before it runs against every widened panel of the chunk. */
static void chunk_task(void *context, size_t index, int thread) {
  const lane_plan *plan = context;
  const bfloat16_problem *g = plan->problem;
  int64_t task = (int64_t)index;
  if (task < plan->next_pack_tasks) {
    pack_chunk_panel(plan, plan->chunk + 1, task);
    return;
  }
  task -= plan->next_pack_tasks;
  int64_t first = task * plan->block_panels, last = first + plan->block_panels;
  if (last > plan->a_panels) last = plan->a_panels;
  int64_t j_first = plan->chunk * plan->chunk_panels * PANEL_COLUMNS;
  int64_t panels = chunk_panel_count(plan, plan->chunk);
  int64_t r_last = last * PANEL_ROWS < g->m ? last * PANEL_ROWS : g->m;
  int64_t j_last = j_first + panels * PANEL_COLUMNS;
  prepare_c(g, first * PANEL_ROWS, r_last, j_first, j_last < g->n ? j_last : g->n);
  float *packed_a = pool_scratch(thread, 1, (size_t)(PANEL_ROWS * g->k) * sizeof(float));
  if (!packed_a) abort();
  const float *chunk_b = plan->packed_b[plan->chunk & 1];
  for (int64_t panel = first; panel < last; panel++) {
    int64_t r0 = panel * PANEL_ROWS;
    int rows = r_last - r0 < PANEL_ROWS ? (int)(r_last - r0) : PANEL_ROWS;
    bool in_place = plan->in_place && rows == PANEL_ROWS;
    if (!in_place) pack_a(g, r0, rows, packed_a);
    for (int64_t b_index = 0; b_index < panels; b_index++) {
      int64_t j0 = j_first + b_index * PANEL_COLUMNS;
      int columns = g->n - j0 < PANEL_COLUMNS ? (int)(g->n - j0) : PANEL_COLUMNS;
      const float *b = chunk_b + b_index * g->k * PANEL_COLUMNS;
      if (in_place) lanes_tile_in_place(g, b, r0, j0, columns);
      else lanes_tile_packed(g, packed_a, b, r0, rows, j0, columns);
    }
  }
}

/* By panels, one block of rows: A packed (by the first pool job) for every task, cut into
   column panels and, when there are too few panels for the threads, parts of its rows. */
typedef struct {
  const bfloat16_problem *problem;
  float *packed_a;             /* every micro-panel, or in place only the last if partial */
  bool in_place;               /* whole micro-panels read from A's rows (reads_in_place) */
  int64_t first_row, rows;     /* the block: rows [first_row, first_row + rows) */
  int64_t a_panels, b_panels;  /* micro-panels of A in the block, of B in the product */
  int64_t parts, part_panels;  /* row parts per column panel, A micro-panels per part */
} lane_block;

#define PACK_PANELS_PER_TASK 8

static void pack_a_task(void *context, size_t index, int thread) {
  (void)thread;
  const lane_block *block = context;
  int64_t first = (int64_t)index * PACK_PANELS_PER_TASK;
  int64_t last = first + PACK_PANELS_PER_TASK < block->a_panels ? first + PACK_PANELS_PER_TASK
                                                                 : block->a_panels;
  for (int64_t panel = first; panel < last; panel++) {
    int64_t r0 = block->first_row + panel * PANEL_ROWS;
    int64_t left = block->first_row + block->rows - r0;
    pack_a(block->problem, r0, left < PANEL_ROWS ? (int)left : PANEL_ROWS,
           block->packed_a + panel * PANEL_ROWS * block->problem->k);
  }
}

static void compute_task(void *context, size_t index, int thread) {
  const lane_block *block = context;
  const bfloat16_problem *g = block->problem;
  int64_t column_panel = (int64_t)index % block->b_panels, part = (int64_t)index / block->b_panels;
  int64_t j0 = column_panel * PANEL_COLUMNS;
  int columns = g->n - j0 < PANEL_COLUMNS ? (int)(g->n - j0) : PANEL_COLUMNS;
  int64_t first = part * block->part_panels, last = first + block->part_panels;
  if (last > block->a_panels) last = block->a_panels;
  if (first >= last) return;
  int64_t r_first = block->first_row + first * PANEL_ROWS;
  int64_t r_last = block->first_row + last * PANEL_ROWS;
  if (r_last > block->first_row + block->rows) r_last = block->first_row + block->rows;
  prepare_c(g, r_first, r_last, j0, j0 + columns);
  float *b = pool_scratch(thread, 0, (size_t)(g->k * PANEL_COLUMNS) * sizeof(float));
  if (!b) abort();
  pack_b(g, j0, b);
  for (int64_t panel = first; panel < last; panel++) {
    int64_t r0 = block->first_row + panel * PANEL_ROWS;
    int rows = r_last - r0 < PANEL_ROWS ? (int)(r_last - r0) : PANEL_ROWS;
    if (block->in_place && rows == PANEL_ROWS)
      lanes_tile_in_place(g, b, r0, j0, columns);
    else
      lanes_tile_packed(g, block->packed_a + (block->in_place ? 0 : panel * PANEL_ROWS * g->k),
                        b, r0, rows, j0, columns);
  }
}

/*
 * Whether whole micro-panels read A's rows in place, unpacked: when there are too few columns
 * for packing A to pay (it is a transpose per 16 × 16 floats, and the packed copy, written by
 * one core and read by the others, moves between their caches at every call) and PANEL_ROWS
 * rows of A fit in three fifths of L1 beside a lane's slice of B, where each lane's pass finds
 * them (it reads one float of every line). Measured at k = 576 (27 KB of a 48 KB L1), two
 * threads, same process: n = 192 at 60 rows 0.38 → 0.92 of the float32 GEMM, at 256 rows
 * 0.73 → 0.94; n = 576 0.80 → 0.92 and 0.86 → 0.93; but n = 1,536 and 49,152 at 256 rows
 * 0.98 → 0.95 (B's panel and the rows contend for L1). At k = 1,536 (74 KB) in place ran at
 * 0.62 of packed.
 */
#define IN_PLACE_COLUMNS 1024

static bool panel_in_l1(const bfloat16_problem *g) {
  int64_t l1 = host_detect()->l1d_bytes;
  return PANEL_ROWS * g->k * (int64_t)sizeof(float) * 5 <= l1 * 3;
}

static bool reads_in_place(const bfloat16_problem *g) {
  return g->n <= IN_PLACE_COLUMNS && panel_in_l1(g);
}

/*
 * Rows per block of packed A: a block's worth of L2 (host.c), but at least LANE_BLOCK_ROWS,
 * below which widening B once per block would cost more than reading A from L3.
 */
#define LANE_BLOCK_ROWS 512

static int64_t block_rows(const bfloat16_problem *g) {
  int64_t rows = host_tuning()->a_block_bytes / (g->k * (int64_t)sizeof(float));
  if (rows < LANE_BLOCK_ROWS) rows = LANE_BLOCK_ROWS;
  rows = chunk_count(rows, PANEL_ROWS) * PANEL_ROWS;
  return rows < g->m ? rows : g->m;
}

/*
 * Row parts per column panel: 1, unless the panels alone leave threads idle in the last round;
 * then the fewest parts that make the task count a multiple of the threads (each part widens
 * B's panel again).
 */
static int64_t row_parts(int64_t b_panels, int64_t a_panels) {
  int64_t threads = pool_thread_count();
  if (b_panels >= 4 * threads || b_panels % threads == 0) return 1;
  int64_t parts = 1;
  while (parts < a_panels && parts < threads && b_panels * parts % threads != 0) parts++;
  return parts;
}

/* Whether all of A fits in three quarters of a core's L2 (host.c's L2 is twice its A block). */
static bool a_fits_l2(const bfloat16_problem *g) {
  int64_t l2 = host_tuning()->a_block_bytes * 2;
  return g->m * g->k * (int64_t)sizeof(float) * 4 <= l2 * 3;
}

/* By panels (run_by_chunks says when): blocks of rows, a task per B panel it widens itself. */
static void run_by_panels(const bfloat16_problem *g, bool share) {
  bool in_place = reads_in_place(g);
  int64_t rows_per_block = in_place ? g->m : block_rows(g);
  int64_t packed_panels = in_place ? 1 : chunk_count(rows_per_block, PANEL_ROWS);
  float *packed_a =
      pool_scratch(0, 1, (size_t)(packed_panels * PANEL_ROWS * g->k) * sizeof(float));
  if (!packed_a) abort();
  for (int64_t first = 0; first < g->m; first += rows_per_block) {
    lane_block block = {.problem = g, .packed_a = packed_a, .in_place = in_place};
    block.first_row = first;
    block.rows = g->m - first < rows_per_block ? g->m - first : rows_per_block;
    block.a_panels = chunk_count(block.rows, PANEL_ROWS);
    block.b_panels = chunk_count(g->n, PANEL_COLUMNS);
    block.parts = row_parts(block.b_panels, block.a_panels);
    block.part_panels = chunk_count(block.a_panels, block.parts);
    if (!in_place) {
      run_maybe_parallel((size_t)chunk_count(block.a_panels, PACK_PANELS_PER_TASK), pack_a_task,
                         &block, share);
    } else if (block.rows % PANEL_ROWS != 0) {
      int64_t last = block.rows / PANEL_ROWS * PANEL_ROWS;
      pack_a(g, first + last, (int)(block.rows - last), packed_a);
    }
    run_maybe_parallel((size_t)(block.b_panels * block.parts), compute_task, &block, share);
  }
}

/* By chunks: B's panels in chunks that fit half of L2 (host.c), rows in twice as many equal
   blocks as threads, so that none idles at the end. */
static void plan_lanes(lane_plan *plan, int threads) {
  const bfloat16_problem *g = plan->problem;
  plan->a_panels = chunk_count(g->m, PANEL_ROWS);
  plan->b_panels = chunk_count(g->n, PANEL_COLUMNS);
  int64_t panel_bytes = g->k * PANEL_COLUMNS * (int64_t)sizeof(float);
  int64_t chunk_limit = host_tuning()->a_block_bytes / panel_bytes;
  if (chunk_limit < 1) chunk_limit = 1;
  plan->chunks = chunk_count(plan->b_panels, chunk_limit);
  plan->chunk_panels = chunk_count(plan->b_panels, plan->chunks);
  plan->chunks = chunk_count(plan->b_panels, plan->chunk_panels);
  plan->row_blocks = threads > 1 ? 2 * (int64_t)threads : 1;
  if (plan->row_blocks > plan->a_panels) plan->row_blocks = plan->a_panels;
  plan->block_panels = chunk_count(plan->a_panels, plan->row_blocks);
  plan->row_blocks = chunk_count(plan->a_panels, plan->block_panels);
}

/*
 * Two drivers, the same tiles (so the same bits). By panels, each task widens one B panel and
 * runs a block of rows against it: right when all of A stays in every core's L2, where each task
 * re-reads it, and B never crosses between cores. Past that a task re-read its whole block of A
 * (at least 512 rows, or every row when read in place) from L3 for every panel of B. By chunks,
 * B's panels are widened once per chunk, and a task keeps one A micro-panel in L1 while the
 * chunk's panels stream from its L2, as gemm_packed.c does; A is re-packed once per chunk, which
 * pays only while its micro-panel fits L1. Measured on an Intel Xeon (cpuid model 207), this
 * build against the one before in one process, 2,048 rows: by chunks at k = 576 ran 1.23–1.28×
 * as fast for 576 and 192 columns (A was read in place, every row per B panel), 0.97–1.05× for
 * 1,536 and 49,152 (one thread, CPU time); at k = 1,536 0.96–1.05× and at k = 8,960 0.57×
 * (two threads), so deeper products stay by panels.
 */
static void run_by_chunks(const bfloat16_problem *g, bool share) {
  lane_plan plan = {.problem = g, .in_place = reads_in_place(g)};
  plan_lanes(&plan, share ? pool_thread_count() : 1);
  int64_t chunk_floats = plan.chunk_panels * g->k * PANEL_COLUMNS;
  float *packed_b = pool_scratch(0, 2, (size_t)(2 * chunk_floats) * sizeof(float));
  if (!packed_b) abort();
  plan.packed_b[0] = packed_b;
  plan.packed_b[1] = packed_b + chunk_floats;
  for (plan.chunk = -1; plan.chunk < plan.chunks; plan.chunk++) {
    plan.next_pack_tasks = chunk_panel_count(&plan, plan.chunk + 1);
    int64_t row_tasks = plan.chunk >= 0 ? plan.row_blocks : 0;
    run_maybe_parallel((size_t)(plan.next_pack_tasks + row_tasks), chunk_task, &plan, share);
  }
}

void matmul_bfloat16_lanes(const bfloat16_problem *g) {
  bool share = (double)g->m * g->n * g->k >= PARALLEL_WORK;
  if (a_fits_l2(g) || !panel_in_l1(g)) run_by_panels(g, share);
  else run_by_chunks(g, share);
}
