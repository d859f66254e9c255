/*
 * Cache-blocked sgemm in the GotoBLAS/BLIS scheme. For each KC-deep slice of the product,
 * op(A) is packed into MR-row micro-panels and op(B) into NR-column micro-panels (contiguous,
 * zero-padded at the edges, transposes resolved while packing), then a register-blocked
 * MR×NR micro-kernel runs over the packed panels: one NR-wide panel of B stays in L1 while
 * the MR-row panels of an MC-row block of A stream from L2. Packing and compute are each split
 * into pool tasks; every element of C is written by exactly one task, so results do not depend
 * on the thread count.
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
/* Rows of A per block (MC), a multiple of MR sized to the host's L2 (host.c). */
#define MC (host_tuning()->packed_rows)
/* Column panels per compute task (fewer when that leaves threads idle). */
#define GROUP_PANELS 8
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

typedef struct {
  const gemm_problem *g;
  float *packed_a, *packed_b;
  int64_t p0, depth;
  float beta; /* the caller's beta for the first slice, then 1 */
  int64_t a_panels, b_panels, a_pack_tasks, b_pack_tasks;
  int64_t row_blocks, column_groups, group_panels;
} gemm_slice;

static void pack_task(void *context, size_t index, int thread) {
  (void)thread;
  const gemm_slice *s = context;
  int64_t task = (int64_t)index;
  bool is_a = task < s->a_pack_tasks;
  int64_t first = (is_a ? task : task - s->a_pack_tasks) * PACK_PANELS_PER_TASK;
  int64_t total = is_a ? s->a_panels : s->b_panels;
  int64_t last = first + PACK_PANELS_PER_TASK < total ? first + PACK_PANELS_PER_TASK : total;
  for (int64_t panel = first; panel < last; panel++) {
    if (is_a) pack_a_panel(s->g, panel, s->p0, s->depth, s->packed_a + panel * MR * s->depth);
    else pack_b_panel(s->g, panel, s->p0, s->depth, s->packed_b + panel * NR * s->depth);
  }
}

static void compute_task(void *context, size_t index, int thread) {
  (void)thread;
  const gemm_slice *s = context;
  const gemm_problem *g = s->g;
  int64_t block = (int64_t)index / s->column_groups, group = (int64_t)index % s->column_groups;
  int64_t first_a = block * (MC / MR), last_a = first_a + MC / MR;
  if (last_a > s->a_panels) last_a = s->a_panels;
  int64_t first_b = group * s->group_panels, last_b = first_b + s->group_panels;
  if (last_b > s->b_panels) last_b = s->b_panels;
  for (int64_t pb = first_b; pb < last_b; pb++) {
    const float *b = s->packed_b + pb * NR * s->depth;
    int columns = g->n - pb * NR < NR ? (int)(g->n - pb * NR) : NR;
    for (int64_t pa = first_a; pa < last_a; pa++) {
      int rows = g->m - pa * MR < MR ? (int)(g->m - pa * MR) : MR;
      micro_kernel(s->depth, s->packed_a + pa * MR * s->depth, b, g->c + pa * MR * g->n + pb * NR,
                   g->n, rows, columns, g->alpha, s->beta);
    }
  }
}

/* C = beta·C when there is nothing to multiply (k = 0). */
static void scale_c(const gemm_problem *g) {
  int64_t count = g->m * g->n;
  if (g->beta == 0.0f) memset(g->c, 0, (size_t)count * sizeof(float));
  else for (int64_t i = 0; i < count; i++) g->c[i] *= g->beta;
}

static void gemm_run(const gemm_problem *g, bool parallel) {
  if (g->m == 0 || g->n == 0) return;
  if (g->k == 0) {
    scale_c(g);
    return;
  }
  gemm_slice s = {.g = g};
  s.a_panels = chunk_count(g->m, MR);
  s.b_panels = chunk_count(g->n, NR);
  int64_t slice_depth = g->k < KC ? g->k : KC;
  float *packed_a = pool_scratch(0, 1, (size_t)(s.a_panels * MR * slice_depth) * sizeof(float));
  float *packed_b = pool_scratch(0, 2, (size_t)(s.b_panels * NR * slice_depth) * sizeof(float));
  if (!packed_a || !packed_b) abort();
  s.packed_a = packed_a;
  s.packed_b = packed_b;
  s.a_pack_tasks = chunk_count(s.a_panels, PACK_PANELS_PER_TASK);
  s.b_pack_tasks = chunk_count(s.b_panels, PACK_PANELS_PER_TASK);
  s.row_blocks = chunk_count(g->m, MC);
  int64_t wanted_tasks = parallel ? 4 * (int64_t)pool_thread_count() : 1;
  s.group_panels = GROUP_PANELS;
  while (s.group_panels > 1 && s.row_blocks * chunk_count(s.b_panels, s.group_panels) < wanted_tasks) {
    s.group_panels /= 2;
  }
  s.column_groups = chunk_count(s.b_panels, s.group_panels);
  /* Sharing pays off from roughly a million multiply-adds per product. */
  bool share = parallel && (double)g->m * g->n * g->k >= 1e6;
  for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
    s.p0 = p0;
    s.depth = g->k - p0 < KC ? g->k - p0 : KC;
    s.beta = p0 == 0 ? g->beta : 1.0f;
    run_maybe_parallel((size_t)(s.a_pack_tasks + s.b_pack_tasks), pack_task, &s, share);
    run_maybe_parallel((size_t)(s.row_blocks * s.column_groups), compute_task, &s, share);
  }
}

void gemm_packed(const gemm_problem *problem) { gemm_run(problem, true); }

void gemm_packed_single_thread(const gemm_problem *problem) { gemm_run(problem, false); }
