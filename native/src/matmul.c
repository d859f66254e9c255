/*
 * matmul dispatch. Per product (one batch item):
 *  - few rows (e.g. token-by-token generation): kernels that read B in place, once, split over
 *    columns of C; any copy of B would cost more than the product itself (matmul_skinny.c);
 *  - otherwise OpenBLAS's sgemm when it is the host's choice (blas.c), else ours: column
 *    panels (gemm_panels.c) on AVX-512, the fully packed kernel (gemm_packed.c) for long
 *    transposed products and on narrower SIMD.
 * Many small batch items run in parallel over the batch instead.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "gemm.h"
#include "host.h"
#include "kernels.h"
#include "parallel.h"
#include "paths.h"
#include "simd.h"


/* Few-row products that need no copy of B (matmul_skinny.c). */
#define SKINNY_ROWS 16
/* gemm_panels re-reads A once per column panel: with a long k, and sooner with A transposed,
   packing A once (gemm_packed) is cheaper. Thresholds from measurements on AMD Zen 5. */
#define PANEL_MAX_DEPTH 1024
#define PANEL_TRANSPOSED_MAX_DEPTH 512
/* With this few rows A is small enough to stay in L2 however deep k is, so its re-reads are
   cheap, while packing B (the weights, read once per product) is pure overhead: panels win at
   any depth. Decode steps at rollout batch sizes (16–256 rows) are these products. */
#define PANEL_ANY_DEPTH_MAX_ROWS 256
/*
 * Past PANEL_MAX_DEPTH, up to this many rows and columns the panels still beat packing as long
 * as a 64-row block of A fits the host's A block (k ≤ 4,096 with 1 MiB): measured on an Intel
 * Xeon (AVX-512, 2 threads), panels over packed 1.08–1.24× at 512–1,024 rows, 192–576 columns
 * and k = 1,024–3,072 (a LoRA step's down projection and the input gradients of gate and up),
 * 0.87× at 1,536 columns, 0.85× at k = 8,192, 0.98× at 2,048 rows.
 */
#define PANEL_DEEP_MAX_ROWS 1024
#define PANEL_DEEP_MAX_COLUMNS 1024
#define PANEL_DEEP_MIN_BLOCK_ROWS 64
/* At least this many rows for few columns to take the transposed product (few_columns_product). */
#define FEW_COLUMNS_MIN_ROWS 64
/* Batch items smaller than this (multiply-adds) are spread over threads one item each. */
#define SMALL_ITEM_WORK 1000000.0

const char *kernel_blas_name(void) { return blas_sgemm() ? "openblas" : "none"; }

const char *kernel_blas_version(void) { return blas_version(); }

const char *kernel_sgemm_name(void) { return sgemm_path(); }

int kernel_vector_width(void) { return VECTOR_WIDTH; }

void skinny_product(const gemm_problem *g, bool parallel);

/*
 * Shallow products (k below PANEL_MAX_DEPTH) of more than a few rows whose B outgrows one
 * core's L2, or whose A outgrows two: the packed driver, which packs B once per slice and keeps
 * each A micro-panel in L1 (gemm_packed.c), overtook the panels there once it was rebuilt; the
 * panels re-read their A block from L2 for every 32-column panel and copy each panel of B once
 * per block of rows. Measured on an Intel Xeon (AVX-512, 2 MiB of L2 a core, 2 threads, both
 * kernels alternating in one process): packed over panels 1.12× at 512 × 1,536 × 576 (a LoRA
 * step's gate and up), 1.06× with B transposed, 1.14× at 1,024 rows, 1.08–1.13× at 2,048 rows
 * and 192–576 columns; level at k = 1,536 and at 512 × 49,152 × 576; 0.85–0.94× where both
 * fit (256–1,024 × 576 × 576), which keep the panels (docs/guides/performance.md).
 */
static bool outgrows_panels(const gemm_problem *g) {
  /* The L2 the block sizes were derived from (host.c: the A block is half of it). */
  int64_t l2 = 2 * host_tuning()->a_block_bytes;
  int64_t a_bytes = g->m * g->k * (int64_t)sizeof(float);
  int64_t b_bytes = g->k * g->n * (int64_t)sizeof(float);
  return !g->transpose_a && g->m > PANEL_ANY_DEPTH_MAX_ROWS && g->k < PANEL_MAX_DEPTH &&
         (b_bytes > l2 || a_bytes > 2 * l2);
}

void gemm_own(const gemm_problem *g, bool parallel) {
  if (gemm_weight_rows_applies(g)) {
    path_taken(PATH_OWN_WEIGHT_ROWS, (double)g->m * g->n * g->k);
    gemm_weight_rows(g, parallel);
    return;
  }
  /* The panel kernel's 8-row register blocks need AVX-512's 32 registers. */
  int64_t panel_depth = g->transpose_a ? PANEL_TRANSPOSED_MAX_DEPTH : PANEL_MAX_DEPTH;
  bool few_rows = !g->transpose_a && g->m <= PANEL_ANY_DEPTH_MAX_ROWS;
  bool deep = !g->transpose_a && g->m <= PANEL_DEEP_MAX_ROWS && g->n <= PANEL_DEEP_MAX_COLUMNS &&
              g->k * PANEL_DEEP_MIN_BLOCK_ROWS * (int64_t)sizeof(float) <=
                  (int64_t)host_tuning()->a_block_bytes;
  bool panels =
      VECTOR_WIDTH == 16 && !outgrows_panels(g) && (g->k < panel_depth || few_rows || deep);
  path_taken(panels ? PATH_OWN_PANELS : PATH_OWN_PACKED, (double)g->m * g->n * g->k);
  if (panels) {
    gemm_panels(g, parallel);
  } else if (parallel) {
    gemm_packed(g);
  } else {
    gemm_packed_single_thread(g);
  }
}

/* C = beta·C when there is nothing to multiply (k = 0). */
static void scale_only(const gemm_problem *g) {
  int64_t count = g->m * g->n;
  if (g->beta == 0.0f) memset(g->c, 0, (size_t)count * sizeof(float));
  else for (int64_t i = 0; i < count; i++) g->c[i] *= g->beta;
}

/*
 * A weight gradient with few columns and many rows (a LoRA up-projection's, [out × rank] = dYᵀ·X
 * over the batch's tokens, A read transposed): the transposed product Cᵀ = op(B)ᵀ·op(A)ᵀ has
 * few rows, which the skinny kernels run in place, and C takes it back transposed. The column
 * panels spent ~0.3 ms on [192 × 8] × depth 212 (a panel is 64 columns wide, 8 of them used);
 * this path 0.008 ms. Only for a transposed A: a forward product (x·Wᵀ) keeps the panels at any
 * row count above SKINNY_ROWS, so a float32 model's rows come out the same in a micro-batch as
 * in the whole batch (gradient-step.test.ts, trust-region-passes.test.ts).
 */
static void few_columns_product(const gemm_problem *g, bool parallel) {
  float *transposed = malloc((size_t)(g->m * g->n) * sizeof(float));
  if (!transposed) abort();
  gemm_problem flipped = {g->b, g->a, transposed, g->n, g->m, g->k,
                          !g->transpose_b, !g->transpose_a, g->alpha, 0.0f};
  skinny_product(&flipped, parallel);
  for (int64_t r = 0; r < g->m; r++) {
    float *row = g->c + r * g->n;
    for (int64_t j = 0; j < g->n; j++) {
      float value = transposed[j * g->m + r];
      row[j] = g->beta == 0.0f ? value : g->beta * row[j] + value;
    }
  }
  free(transposed);
}

static void product(const gemm_problem *g, bool parallel) {
  if (g->k == 0) {
    scale_only(g);
    return;
  }
  double work = (double)g->m * g->n * g->k;
  if (g->m <= SKINNY_ROWS) {
    path_taken(PATH_MATMUL_SKINNY, work);
    skinny_product(g, parallel);
    return;
  }
  if (g->transpose_a && g->n <= SKINNY_ROWS && g->m >= FEW_COLUMNS_MIN_ROWS) {
    path_taken(PATH_MATMUL_FEW_COLUMNS, work);
    few_columns_product(g, parallel);
    return;
  }
  if (sgemm_uses_blas()) {
    path_taken(PATH_MATMUL_OPENBLAS, work);
    blas_product(g, parallel);
    return;
  }
  gemm_own(g, parallel);
}

typedef struct {
  const matmul_arguments *arguments;
} batch_context;

static gemm_problem item_problem(const matmul_arguments *x, int64_t item) {
  gemm_problem g = {x->a + item * x->stride_a, x->b + item * x->stride_b,
                    x->c + item * x->m * x->n, x->m, x->n, x->k,
                    x->transpose_a, x->transpose_b, x->alpha, x->beta};
  return g;
}

static void batch_item_task(void *context, size_t index, int thread) {
  (void)thread;
  const batch_context *t = context;
  gemm_problem g = item_problem(t->arguments, (int64_t)index);
  product(&g, false);
}

void kernel_matmul(const matmul_arguments *x) {
  if (x->batch == 0 || x->m == 0 || x->n == 0) return;
  double item_work = (double)x->m * x->n * (x->k > 0 ? x->k : 1);
  if (x->batch > 1 && item_work < SMALL_ITEM_WORK) {
    path_taken(PATH_MATMUL_BATCHED_SMALL, item_work * x->batch);
    batch_context context = {x};
    run_maybe_parallel((size_t)x->batch, batch_item_task, &context,
                       item_work * x->batch >= SMALL_ITEM_WORK);
    return;
  }
  for (int64_t item = 0; item < x->batch; item++) {
    gemm_problem g = item_problem(x, item);
    product(&g, true);
  }
}
