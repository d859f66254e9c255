/*
 * Cache-blocked sgemm in the GotoBLAS/BLIS scheme. For each KC-deep slice of the product,
 * op(B) is packed once into NR-column micro-panels (contiguous, zero-padded at the edges,
 * transposes resolved while packing) and each task packs the MR-row micro-panels of op(A) it
 * needs one at a time, right before using them; a register-blocked MR×NR micro-kernel runs
 * each A micro-panel (in L1) against a chunk of B's panels (in the task thread's L2). Every
 * element of C is written by exactly one task per slice, and every task sums the same slices
 * in the same order, so results do not depend on the thread count or on the task split.
 *
 * Why this shape (measured on an Intel Xeon, cpuid model 207, 4096×1024×1024): the driver
 * before packed all of A for a slice in one pool job (4 MiB, twice a core's L2), then ran
 * tasks that each re-read a 1,008-row block of it from L3 and kept one B panel in L1 while
 * A's panels streamed from L2; it ran at 0.80–0.86 of OpenBLAS's own single-threaded driver
 * per CPU-second. Packing each A micro-panel just before use and keeping it in L1 while B's
 * panels stream from L2 (C's tile rows then run along memory), with C's tile prefetched,
 * measured 1.18–1.23× the old driver and 1.00–1.03× OpenBLAS's (docs/guides/performance.md).
 */
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "host.h"
#include "parallel.h"
#include "simd.h"

#ifndef MR
#if VECTOR_WIDTH == 16
#define MR 12
#else
#define MR 6
#endif
#endif
#define NR (2 * VECTOR_WIDTH)
/* The k slices every product sums by (gemm.h): the order rows share at any m. */
#define KC GEMM_SLICE_DEPTH
/* B's panels packed per pool task. */
#define PACK_PANELS_PER_TASK 16

/* acc (MR×NR tile) → C, with alpha and beta, clipped to rows × columns. */
static void store_tile(vfloat accumulator[MR][2], float *c, int64_t c_stride, int rows,
                       int columns, float alpha, float beta) {
  if (rows == MR && columns == NR) {
    for (int r = 0; r < MR; r++) {
      for (int half = 0; half < 2; half++) {
        float *target = c + r * c_stride + half * VECTOR_WIDTH;
        vfloat value = accumulator[r][half] * alpha;
        if (beta != 0.0f) value += vload(target) * beta;
        vstore(target, value);
      }
    }
    return;
  }
  float tile[MR * NR];
  for (int r = 0; r < MR; r++) {
    vstore(tile + r * NR, accumulator[r][0]);
    vstore(tile + r * NR + VECTOR_WIDTH, accumulator[r][1]);
  }
  for (int r = 0; r < rows; r++) {
    for (int j = 0; j < columns; j++) {
      float value = alpha * tile[r * NR + j];
      c[r * c_stride + j] = beta != 0.0f ? value + beta * c[r * c_stride + j] : value;
    }
  }
}

/* C tile (+)= packed A micro-panel [depth][MR] · packed B micro-panel [depth][NR]. */
static void micro_kernel(int64_t depth, const float *restrict a, const float *restrict b, float *c,
                         int64_t c_stride, int rows, int columns, float alpha, float beta) {
  vfloat accumulator[MR][2];
  /* C's rows lie a row of C apart, too far for the hardware prefetchers; fetching the tile
     now hides its misses behind the depth loop (1.07× the driver without it, one thread). */
  for (int r = 0; r < rows; r++) {
    __builtin_prefetch(c + r * c_stride, 1, 3);
    __builtin_prefetch(c + r * c_stride + NR - 1, 1, 3);
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; r++) accumulator[r][0] = accumulator[r][1] = (vfloat){0};
  for (int64_t p = 0; p < depth; p++) {
    vfloat b0 = vload(b + p * NR), b1 = vload(b + p * NR + VECTOR_WIDTH);
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++) {
      vfloat a_value = vbroadcast(a[p * MR + r]);
      accumulator[r][0] += a_value * b0;
      accumulator[r][1] += a_value * b1;
    }
  }
  store_tile(accumulator, c, c_stride, rows, columns, alpha, beta);
}

/* op(A)(i, p) and op(B)(p, j) */
static inline float element_a(const gemm_problem *g, int64_t i, int64_t p) {
  return g->transpose_a ? g->a[p * g->m + i] : g->a[i * g->k + p];
}
static inline float element_b(const gemm_problem *g, int64_t p, int64_t j) {
  return g->transpose_b ? g->b[j * g->k + p] : g->b[p * g->n + j];
}

/* Micro-panel `panel` of A (rows panel·MR...) for depth slice [p0, p0 + depth). */
static void pack_a_panel(const gemm_problem *g, int64_t panel, int64_t p0, int64_t depth,
                         float *target) {
  int64_t i0 = panel * MR;
  int rows = g->m - i0 < MR ? (int)(g->m - i0) : MR;
  if (g->transpose_a) {
    for (int64_t p = 0; p < depth; p++) {
      const float *source = g->a + (p0 + p) * g->m + i0;
      float *row = target + p * MR;
      for (int r = 0; r < rows; r++) row[r] = source[r];
      for (int r = rows; r < MR; r++) row[r] = 0.0f;
    }
    return;
  }
  /* Rows of A run along k: transpose VECTOR_WIDTH-square tiles in registers, in groups of
     VECTOR_WIDTH rows of the panel (one group when MR <= VECTOR_WIDTH). */
  int64_t p = 0;
  for (; p + VECTOR_WIDTH <= depth; p += VECTOR_WIDTH) {
    for (int r0 = 0; r0 < MR; r0 += VECTOR_WIDTH) {
      int group = MR - r0 < VECTOR_WIDTH ? MR - r0 : VECTOR_WIDTH;
      vfloat tile[VECTOR_WIDTH];
      for (int r = 0; r < VECTOR_WIDTH; r++) {
        tile[r] = r < group && r0 + r < rows ? vload(g->a + (i0 + r0 + r) * g->k + p0 + p)
                                             : (vfloat){0};
      }
      vtranspose(tile);
      for (int q = 0; q < VECTOR_WIDTH; q++) {
        memcpy(target + (p + q) * MR + r0, &tile[q], (size_t)group * sizeof(float));
      }
    }
  }
  for (; p < depth; p++) {
    for (int r = 0; r < MR; r++) target[p * MR + r] = r < rows ? g->a[(i0 + r) * g->k + p0 + p] : 0.0f;
  }
}

static void pack_b_panel(const gemm_problem *g, int64_t panel, int64_t p0, int64_t depth,
                         float *target) {
  int64_t j0 = panel * NR;
  int columns = g->n - j0 < NR ? (int)(g->n - j0) : NR;
  if (!g->transpose_b) {
    for (int64_t p = 0; p < depth; p++) {
      const float *source = g->b + (p0 + p) * g->n + j0;
      float *row = target + p * NR;
      if (columns == NR) {
        memcpy(row, source, NR * sizeof(float));
      } else {
        for (int j = 0; j < columns; j++) row[j] = source[j];
        for (int j = columns; j < NR; j++) row[j] = 0.0f;
      }
    }
    return;
  }
  /* Rows of Bᵀ run along k: transpose two VECTOR_WIDTH-square tiles per step of k. */
  int64_t p = 0;
  for (; p + VECTOR_WIDTH <= depth; p += VECTOR_WIDTH) {
    for (int half = 0; half < 2; half++) {
      vfloat tile[VECTOR_WIDTH];
      for (int j = 0; j < VECTOR_WIDTH; j++) {
        int column = half * VECTOR_WIDTH + j;
        tile[j] = column < columns ? vload(g->b + (j0 + column) * g->k + p0 + p) : (vfloat){0};
      }
      vtranspose(tile);
      for (int q = 0; q < VECTOR_WIDTH; q++) vstore(target + (p + q) * NR + half * VECTOR_WIDTH, tile[q]);
    }
  }
  for (; p < depth; p++) {
    for (int j = 0; j < NR; j++) target[p * NR + j] = j < columns ? g->b[(j0 + j) * g->k + p0 + p] : 0.0f;
  }
}

/* One product's plan and the slice being run (a pool job per slice). */
typedef struct {
  const gemm_problem *g;
  float *packed_b[2]; /* even slices' packed B, odd slices' */
  int64_t p0, depth, next_depth;
  int64_t slice;
  float beta; /* the caller's beta for the first slice, then 1 */
  int64_t a_panels, b_panels;
  int64_t row_blocks, block_panels;    /* equal blocks of A's micro-panels */
  int64_t column_chunks, chunk_panels; /* equal chunks of B's panels, each kept in L2 */
  int64_t pack_tasks;                  /* tasks packing a slice of B */
  int64_t next_pack_tasks;             /* this job's tasks packing the next slice (first) */
} gemm_plan;

static void pack_b_range(const gemm_plan *s, int64_t task, int64_t p0, int64_t depth,
                         float *packed) {
  int64_t first = task * PACK_PANELS_PER_TASK;
  int64_t last = first + PACK_PANELS_PER_TASK;
  if (last > s->b_panels) last = s->b_panels;
  for (int64_t panel = first; panel < last; panel++) {
    pack_b_panel(s->g, panel, p0, depth, packed + panel * NR * depth);
  }
}

static void pack_first_slice_task(void *context, size_t index, int thread) {
  (void)thread;
  const gemm_plan *s = context;
  pack_b_range(s, (int64_t)index, 0, s->depth, s->packed_b[0]);
}

/*
 * Tasks 0..next_pack_tasks-1 pack the next slice's B into the other buffer (nothing reads it
 * before the next job); the rest each run one block of rows against one chunk of columns.
 */
static void slice_task(void *context, size_t index, int thread) {
  const gemm_plan *s = context;
  const gemm_problem *g = s->g;
  int64_t task = (int64_t)index;
  if (task < s->next_pack_tasks) {
    pack_b_range(s, task, s->p0 + s->depth, s->next_depth, s->packed_b[(s->slice + 1) & 1]);
    return;
  }
  task -= s->next_pack_tasks;
  int64_t block = task / s->column_chunks, chunk = task % s->column_chunks;
  int64_t first_a = block * s->block_panels, last_a = first_a + s->block_panels;
  if (last_a > s->a_panels) last_a = s->a_panels;
  int64_t first_b = chunk * s->chunk_panels, last_b = first_b + s->chunk_panels;
  if (last_b > s->b_panels) last_b = s->b_panels;
  float *packed_a = pool_scratch(thread, 1, (size_t)(MR * s->depth) * sizeof(float));
  if (!packed_a) abort();
  const float *packed_b = s->packed_b[s->slice & 1];
  for (int64_t pa = first_a; pa < last_a; pa++) {
    pack_a_panel(g, pa, s->p0, s->depth, packed_a);
    int rows = g->m - pa * MR < MR ? (int)(g->m - pa * MR) : MR;
    float *c_row = g->c + pa * MR * g->n;
    for (int64_t pb = first_b; pb < last_b; pb++) {
      int columns = g->n - pb * NR < NR ? (int)(g->n - pb * NR) : NR;
      micro_kernel(s->depth, packed_a, packed_b + pb * NR * s->depth, c_row + pb * NR, g->n,
                   rows, columns, g->alpha, s->beta);
    }
  }
}

/*
 * The task split: B's panels in chunks that fit the host's L2 (host.c), rows in equal blocks
 * of at most packed_rows, as many as a multiple of the threads so none idles at the end (the
 * old 1,008-row blocks left a 64-row one); the columns split further only when that still
 * gives fewer than two tasks a thread.
 */
static void plan_tasks(gemm_plan *s, int threads) {
  const host_tuning_sizes *tuning = host_tuning();
  int64_t chunk_limit = tuning->packed_columns / NR;
  if (chunk_limit < 1) chunk_limit = 1;
  s->column_chunks = chunk_count(s->b_panels, chunk_limit);
  s->row_blocks = chunk_count(s->a_panels, tuning->packed_rows / MR);
  if (s->row_blocks % threads) s->row_blocks += threads - s->row_blocks % threads;
  if (s->row_blocks > s->a_panels) s->row_blocks = s->a_panels;
  s->block_panels = chunk_count(s->a_panels, s->row_blocks);
  s->row_blocks = chunk_count(s->a_panels, s->block_panels);
  while (s->row_blocks * s->column_chunks < 2 * threads && s->column_chunks < s->b_panels) {
    s->column_chunks++;
  }
  s->chunk_panels = chunk_count(s->b_panels, s->column_chunks);
  s->column_chunks = chunk_count(s->b_panels, s->chunk_panels);
  s->pack_tasks = chunk_count(s->b_panels, PACK_PANELS_PER_TASK);
}

/* C = beta·C when there is nothing to multiply (k = 0). */
static void scale_c(const gemm_problem *g) {
  int64_t count = g->m * g->n;
  if (g->beta == 0.0f) memset(g->c, 0, (size_t)count * sizeof(float));
  else for (int64_t i = 0; i < count; i++) g->c[i] *= g->beta;
}

static int64_t slice_depth_at(const gemm_problem *g, int64_t p0) {
  return p0 >= g->k ? 0 : g->k - p0 < KC ? g->k - p0 : KC;
}

static void gemm_run(const gemm_problem *g, bool parallel) {
  if (g->m == 0 || g->n == 0) return;
  if (g->k == 0) {
    scale_c(g);
    return;
  }
  gemm_plan s = {.g = g};
  s.a_panels = chunk_count(g->m, MR);
  s.b_panels = chunk_count(g->n, NR);
  int64_t b_floats = s.b_panels * NR * slice_depth_at(g, 0);
  float *packed_b = pool_scratch(0, 2, (size_t)(2 * b_floats) * sizeof(float));
  if (!packed_b) abort();
  s.packed_b[0] = packed_b;
  s.packed_b[1] = packed_b + b_floats;
  /* Sharing pays off from roughly a million multiply-adds per product. */
  bool share = parallel && (double)g->m * g->n * g->k >= 1e6;
  plan_tasks(&s, share ? pool_thread_count() : 1);
  s.depth = slice_depth_at(g, 0);
  run_maybe_parallel((size_t)s.pack_tasks, pack_first_slice_task, &s, share);
  for (s.p0 = 0; s.p0 < g->k; s.p0 += KC, s.slice++) {
    s.depth = slice_depth_at(g, s.p0);
    s.next_depth = slice_depth_at(g, s.p0 + KC);
    s.next_pack_tasks = s.next_depth > 0 ? s.pack_tasks : 0;
    s.beta = s.p0 == 0 ? g->beta : 1.0f;
    size_t tasks = (size_t)(s.next_pack_tasks + s.row_blocks * s.column_chunks);
    run_maybe_parallel(tasks, slice_task, &s, share);
  }
}

void gemm_packed(const gemm_problem *problem) { gemm_run(problem, true); }

void gemm_packed_single_thread(const gemm_problem *problem) { gemm_run(problem, false); }
