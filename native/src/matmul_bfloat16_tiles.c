/*
 * C = alpha·A·Bᵀ (+ C) for a bfloat16 B [n×k] on Intel's AMX tiles, every A·B term exact as on
 * the lanes (matmul_bfloat16.c), summed in the tiles' own order (B [k×n], the input gradient's
 * product, in matmul_bfloat16_tiles_rows.c; the decision of both and the tile configuration here).
 *
 * AMX multiplies bfloat16 by bfloat16 only (TDPBF16PS: 16×16 float32 sums of a 16×32 by a
 * 32×16 bfloat16 tile). A float32 a splits exactly into three bfloat16 parts, a = a₁ + a₂ + a₃
 * (the top 16 bits, then the top 16 of what is left, twice), and a part times a bfloat16 weight
 * is exact in float32 (8 by 8 significant bits). A tile holds five rows of A as fifteen columns,
 * each row's three parts side by side, so one instruction per 32 values of k sums all three.
 * On an Intel Xeon with AMX (2 cores) TDPBF16PS peaked near 3.8 TFLOP/s a core against 0.25 for
 * float32 FMAs.
 *
 * Summation order, the same whatever m is (a row gives the same bits decoded alone as scored
 * with the rest): for each part and each 32-value block of k, TDPBF16PS's two chains from zero
 * (even and odd positions, one fused multiply-add each in k order) and the part's total +
 * (even + odd), subnormal inputs read as zero and subnormal results flushed; the row's total is
 * (part 1 + part 2) + part 3, then alpha·total (+ C). matmul_bfloat16_tile_order.c computes the
 * same sums on AVX-512 lanes (TEAMTR_AMX=lanes: a host without AMX reproducing one with it), and
 * src/backend/native-tile-order.test.ts checks both bit for bit against the order written out.
 * Which order a product takes depends only on the host, TEAMTR_AMX and B's shape (n a multiple
 * of 16, k of 32: every matrix of SmolLM2 and Qwen2.5), never on m. An infinite A entry gives NaN
 * rather than ±infinity (its parts are ∞ and ∞ − ∞).
 *
 * Layout: the tiles compute Cᵀ = B·Aᵀ, so B's rows load in place (16 rows of 32 values a tile,
 * B's row stride apart) and only A is packed, into the right-hand tile's pair-interleaved
 * layout: per row block and block of k, 16 k-pairs × 16 columns × 2 values. One B tile a step,
 * shared by up to four row blocks. Measured against the lanes (same calls, processes
 * alternating TEAMTR_AMX=off, two threads, B streamed): 512×1536×576 in 1.7–1.8 ms against
 * 3.1–3.3, the LM head's 256×49152×576 24–28 ms against 59–61, 64 rows 2.1–2.2×, 16 rows
 * 1.3–1.5×, 2–4 rows 0.9–1.0×; one row 0.7–0.8× (49–59 against 40–41 µs), as the tiles wait on
 * B's 16 strided rows where the lanes stream 4 rows at a time. Tried and not kept: two B tiles
 * a step (slower at every row count), B's next rows fetched into L2 (slower), a tile-ordered
 * copy of B's rows made per call (one row 69–81 µs), and the lanes for the few rows (76 µs:
 * transposing B and six chains per entry cost more than waiting on memory).
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
#define TILES_BUILT 1
#include <immintrin.h>
#include <pthread.h>

#include "bfloat16_tiles.h"
#include <sys/syscall.h>
#include <unistd.h>
#endif



#ifdef TILES_BUILT

/* Whether products take the tile order, and whether the tiles themselves compute it. */
static bool ordered, tiles;
static pthread_once_t decided = PTHREAD_ONCE_INIT;

/*
 * TEAMTR_AMX: unset or `on`, the tile order where the CPU has AMX and Linux lets this process
 * use it; `off`, never (the lanes' order of matmul_bfloat16.c); `lanes`, the tile order on
 * AVX-512 lanes for every row count, with or without tiles (a host without AMX reproducing one
 * with it, and the tests of that path anywhere).
 */
static void decide(void) {
  const host_info *host = host_detect();
  const char *setting = getenv("TEAMTR_AMX");
  if (setting && strcmp(setting, "off") == 0) return;
  if (setting && strcmp(setting, "lanes") == 0) {
    ordered = true;
    return;
  }
  if (!host->amx_tile || !host->amx_bf16) return;
  /* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA: the tile registers' state, per process. */
  tiles = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  ordered = tiles;
}

bool bfloat16_tiles_apply(int64_t n, int64_t k) {
  pthread_once(&decided, decide);
  return ordered && n % TILE_ROWS == 0 && k % TILE_DEPTH == 0;
}

bool bfloat16_tiles_compute(void) {
  pthread_once(&decided, decide);
  return tiles;
}

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t column_bytes[16];
  uint8_t rows[16];
} tile_config;

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16,avx512f,avx512bw")

/* Every tile 16 rows of 64 bytes: 16×16 float32 sums, 16×32 bfloat16 values. */
void bfloat16_tiles_configure(void) {
  tile_config config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int tile = 0; tile < 8; tile++) {
    config.column_bytes[tile] = 64;
    config.rows[tile] = TILE_ROWS;
  }
  /* ldtilecfg written out: GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes, so
     the stores of the rows and widths above were dropped as dead (the tiles then ran on
     whatever the stack held, or faulted). */
  __asm__ volatile("ldtilecfg %0" : : "m"(config));
}

typedef struct {
  const bfloat16_problem *problem;
  uint16_t *packed;
  int64_t depth_blocks;   /* k / 32 */
  int64_t row_blocks;     /* ⌈m / 5⌉ */
  int64_t chunk_blocks;   /* row blocks per task */
  int64_t chunks, groups; /* tasks = chunks × groups */
  int64_t group_columns;  /* B rows (C columns) a task takes */
} tiles_job;

/* The packed tile of depth block `block` in row block `row_block`. */
static inline uint16_t *packed_tile(const tiles_job *job, int64_t row_block, int64_t block) {
  return job->packed + (row_block * job->depth_blocks + block) * TILE_VALUES;
}

/* Packs A's row block `index`: each row's parts side by side as columns of k-pairs. */
static void pack_task(void *context, size_t index, int thread) {
  (void)thread;
  const tiles_job *job = context;
  pack_row_block(job->problem, (int64_t)index, job->depth_blocks,
                 packed_tile(job, (int64_t)index, 0), true);
}

/*
 * Writes one Cᵀ tile (16 B rows × the parts of 5 A rows) into C: each row's total is
 * (part 1 + part 2) + part 3, then alpha·total, plus C when beta ≠ 0.
 */
static void store_tile(const bfloat16_problem *g, const float *sums, int64_t first_row,
                       int64_t first_column) {
  vfloat columns[TILE_ROWS];
  for (int i = 0; i < TILE_ROWS; i++) columns[i] = vload(sums + i * TILE_ROWS);
  vtranspose(columns); /* columns[c]: sum column c over the 16 B rows */
  int64_t rows = g->m - first_row < BLOCK_ROWS ? g->m - first_row : BLOCK_ROWS;
  for (int64_t r = 0; r < rows; r++)
    store_totals(g, g->c + (first_row + r) * g->n + first_column, (__m512)columns[PARTS * r],
                 (__m512)columns[PARTS * r + 1], (__m512)columns[PARTS * r + 2]);
}

/* Stores sum tile `tile` as C's rows of row block `row_block` × columns [column, + 16). */
#define STORE_SUMS(tile, row_block, column) STORE_TILE(tile, store_tile, row_block, column)

/* Cᵀ = B·Aᵀ: B's tile on the left. */
#define WEIGHTS_LEFT(sums, weights, packed) _tile_dpbf16ps(sums, weights, packed)
#define PACKED_A(i, block) packed_tile(job, row_block + (i), block)

/* Loads B's tile of depth block `block` into `tile` and runs `count` row blocks against it. */
#define STEP(tile, block)                                    \
  do {                                                       \
    _tile_loadd(tile, b + (block) * TILE_DEPTH, stride);     \
    ROW_BLOCKS_AGAINST(tile, block, PACKED_A, WEIGHTS_LEFT); \
  } while (0)

/*
 * `count` (1–4) row blocks from `row_block` against B rows [column, column + 16): sums in
 * tiles 0–3, B's tile of each depth block in 4 and 5 by turns (a load never waits for the
 * products still reading the tile it would overwrite), the packed A in 6 and 7 by turns. B is
 * what a step waits on, so one B tile serves up to four row blocks (20 rows); its lines two and
 * three blocks ahead are fetched into L1 meanwhile.
 */
static inline __attribute__((always_inline)) void row_blocks_against_tile(const tiles_job *job,
                                                                          int64_t row_block,
                                                                          int count,
                                                                          int64_t column) {
  const bfloat16_problem *g = job->problem;
  const uint16_t *b = g->b + column * g->k;
  size_t stride = (size_t)g->k * sizeof(uint16_t);
  int64_t depth = job->depth_blocks, block = 0;
  _tile_zero(0);
  if (count >= 2) _tile_zero(1);
  if (count >= 3) _tile_zero(2);
  if (count >= 4) _tile_zero(3);
  for (; block + 2 <= depth; block += 2) {
    if (block + 4 <= depth)
      for (int row = 0; row < TILE_ROWS; row++) {
        __builtin_prefetch(b + row * g->k + (block + 2) * TILE_DEPTH, 0, 3);
        __builtin_prefetch(b + row * g->k + (block + 3) * TILE_DEPTH, 0, 3);
      }
    STEP(4, block);
    STEP(5, block + 1);
  }
  if (block < depth) STEP(4, block);
  STORE_SUMS(0, row_block, column);
  if (count >= 2) STORE_SUMS(1, row_block + 1, column);
  if (count >= 3) STORE_SUMS(2, row_block + 2, column);
  if (count >= 4) STORE_SUMS(3, row_block + 3, column);
}

/* One chunk of A's row blocks against one group of B's rows. */
static void product_task(void *context, size_t index, int thread) {
  (void)thread;
  const tiles_job *job = context;
  const bfloat16_problem *g = job->problem;
  int64_t chunk = (int64_t)index / job->groups, group = (int64_t)index % job->groups;
  int64_t first_block = chunk * job->chunk_blocks;
  int64_t last_block = first_block + job->chunk_blocks < job->row_blocks
                           ? first_block + job->chunk_blocks
                           : job->row_blocks;
  int64_t first_column = group * job->group_columns;
  int64_t last_column =
      first_column + job->group_columns < g->n ? first_column + job->group_columns : g->n;
  bfloat16_tiles_configure();
  for (int64_t block = first_block; block < last_block; block += 4) {
    int64_t count = last_block - block < 4 ? last_block - block : 4;
    for (int64_t column = first_column; column < last_column; column += TILE_ROWS) {
      switch (count) {
        case 4: row_blocks_against_tile(job, block, 4, column); break;
        case 3: row_blocks_against_tile(job, block, 3, column); break;
        case 2: row_blocks_against_tile(job, block, 2, column); break;
        default: row_blocks_against_tile(job, block, 1, column); break;
      }
    }
  }
  _tile_release();
}

#pragma GCC pop_options

/* Rows [first, first + rows) of the product: A packed, then the tiles' tasks. */
static void tiles_slab(const bfloat16_problem *whole, int64_t first, int64_t rows) {
  bfloat16_problem slab = *whole;
  slab.a += first * whole->k;
  slab.c += first * whole->n;
  slab.m = rows;
  tiles_job job = {.problem = &slab,
                   .depth_blocks = slab.k / TILE_DEPTH,
                   .row_blocks = chunk_count(rows, BLOCK_ROWS)};
  size_t block_bytes = (size_t)job.depth_blocks * TILE_VALUES * sizeof(uint16_t);
  /* A chunk of packed rows stays in L2 while a task runs its group of B rows over it. */
  int64_t chunk_blocks = host_tuning()->row_tile_bytes / (int64_t)block_bytes;
  job.chunk_blocks = chunk_blocks < 4 ? 4 : chunk_blocks - chunk_blocks % 4;
  job.chunks = chunk_count(job.row_blocks, job.chunk_blocks);
  job.group_columns = job.chunks == 1 ? few_row_columns(slab.n) : 64;
  job.groups = chunk_count(slab.n, job.group_columns);
  job.packed = pool_scratch(0, 3, block_bytes * (size_t)job.row_blocks);
  if (!job.packed) abort(); /* out of memory for a few MiB: nothing sane to return */
  bool share = (double)rows * slab.n * slab.k >= PARALLEL_WORK;
  run_maybe_parallel((size_t)job.row_blocks, pack_task, &job, share && job.row_blocks > 1);
  run_maybe_parallel((size_t)(job.chunks * job.groups), product_task, &job, share);
}

void matmul_bfloat16_tiles(const bfloat16_problem *g) {
  if (!bfloat16_tiles_compute()) {
    matmul_bfloat16_tile_order_lanes(g);
    return;
  }
  int64_t slab = slab_rows(g->k);
  for (int64_t first = 0; first < g->m; first += slab)
    tiles_slab(g, first, g->m - first < slab ? g->m - first : slab);
}

#else

bool bfloat16_tiles_apply(int64_t n, int64_t k) {
  (void)n;
  (void)k;
  return false;
}

bool bfloat16_tiles_compute(void) { return false; }

void matmul_bfloat16_tiles(const bfloat16_problem *g) {
  (void)g;
  abort(); /* unreachable: bfloat16_tiles_apply is false in this build */
}

#endif
