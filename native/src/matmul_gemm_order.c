/*
 * C = A·op(B) (matmulGemmOrder) with every entry of C summed in the order of our float32 GEMM
 * kernels, whatever m is: a row of A gives the same bits multiplied alone (a decode step) as
 * among thousands (a scoring pass). That order, shared by gemm_panels and gemm_packed and so by every product of
 * more than SKINNY_ROWS rows that runs on our own kernels:
 *   k is cut into GEMM_SLICE_DEPTH-deep slices from p = 0; within a slice one FMA chain per
 *   entry, from zero, p in order; the slices' sums are added to C one after another.
 * Ordinary products with few rows (matmul_skinny.c) sum dot products by lanes instead, and
 * OpenBLAS in its own order, which is why ordinary float32 decode steps and scoring disagree in
 * the last bits. This entry point runs the GEMM order at every m:
 *  - more than CHAINED_ROWS rows: gemm_own (panels or packed, as matmul chooses; never BLAS);
 *  - B [n×k] (a Linear weight [out, in]) with few rows: the kernel below, which reads B in place
 *    and transposes VECTOR_WIDTH × VECTOR_WIDTH tiles in registers as it streams them, so that
 *    a vector runs along C's columns and each lane keeps its entry's one chain along k;
 *  - B [k×n]: gemm_own at any m (its panels copy such a B with memcpy, cheap at any m).
 * Decode steps read every weight once from memory; the in-register transpose (a quarter of a
 * shuffle per weight) keeps ahead of memory, so these run at least at the lane-sum kernel's
 * speed there. With B already in cache (a model of a few MB) the shuffles show: 0.6–0.9× that
 * kernel at 1–8 rows.
 */
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels.h"
#include "paths.h"
#include "parallel.h"
#include "simd.h"

/*
 * Up to this many rows of A, the in-place kernel below; beyond, gemm_own. Measured (one
 * thread, CPU time, SmolLM2-135M shapes): with weights streaming from memory as in decoding,
 * this kernel ran 1.0–1.3× the lane-sum kernel at 1–16 rows and column panels 0.7–1.0× up to
 * 8 rows, 0.94–1.08× at 12–16; with 16 rows its accumulators and a tile no longer fit in
 * registers, so 9–16 rows go to the panels.
 */
#define CHAINED_ROWS 8
/* Columns of C per task: a tile per VECTOR_WIDTH columns. */
#define TASK_COLUMNS (4 * VECTOR_WIDTH)
#define PARALLEL_WORK 200000.0
/*
 * Prefetches go to L2 (prefetcht1), not L1: a tile's B rows (VECTOR_WIDTH·k floats, 36 KB at
 * k = 576) fill L1 by themselves, and prefetching the next tile into L1 evicted the current one
 * (0.7× the lane-sum kernel from memory with prefetcht0, 1.0–1.5× with prefetcht1).
 */
#define PREFETCH_LOCALITY 2

#if VECTOR_WIDTH == 16
#include <immintrin.h>

/*
 * The 16 × 16 transpose in four stages of two-input shuffles with immediate operands (unpack,
 * shufps, then 128-bit block shuffles), 64 instructions in all. simd.h's generic vtranspose
 * compiles to vpermt2ps, which needs index registers and destroys an input (a register copy per
 * shuffle): at one row of A this kernel ran shuffle-bound at half the speed with it.
 */
static inline void transpose_tile(vfloat rows[16]) {
  __m512 unpacked[16], shuffled[16];
  for (int i = 0; i < 8; i++) {
    unpacked[2 * i] = _mm512_unpacklo_ps((__m512)rows[2 * i], (__m512)rows[2 * i + 1]);
    unpacked[2 * i + 1] = _mm512_unpackhi_ps((__m512)rows[2 * i], (__m512)rows[2 * i + 1]);
  }
  /* shuffled[4i + j], 128-bit block b, element e = rows[4i + e][4b + j]. */
  for (int i = 0; i < 4; i++) {
    const __m512 *t = unpacked + 4 * i;
    shuffled[4 * i] = _mm512_shuffle_ps(t[0], t[2], _MM_SHUFFLE(1, 0, 1, 0));
    shuffled[4 * i + 1] = _mm512_shuffle_ps(t[0], t[2], _MM_SHUFFLE(3, 2, 3, 2));
    shuffled[4 * i + 2] = _mm512_shuffle_ps(t[1], t[3], _MM_SHUFFLE(1, 0, 1, 0));
    shuffled[4 * i + 3] = _mm512_shuffle_ps(t[1], t[3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  /* Then a 4 × 4 transpose of 128-bit blocks among shuffled[j], [4 + j], [8 + j], [12 + j]. */
  for (int j = 0; j < 4; j++) {
    __m512 even_low = _mm512_shuffle_f32x4(shuffled[j], shuffled[4 + j], 0x88);
    __m512 odd_low = _mm512_shuffle_f32x4(shuffled[j], shuffled[4 + j], 0xdd);
    __m512 even_high = _mm512_shuffle_f32x4(shuffled[8 + j], shuffled[12 + j], 0x88);
    __m512 odd_high = _mm512_shuffle_f32x4(shuffled[8 + j], shuffled[12 + j], 0xdd);
    rows[j] = (vfloat)_mm512_shuffle_f32x4(even_low, even_high, 0x88);
    rows[8 + j] = (vfloat)_mm512_shuffle_f32x4(even_low, even_high, 0xdd);
    rows[4 + j] = (vfloat)_mm512_shuffle_f32x4(odd_low, odd_high, 0x88);
    rows[12 + j] = (vfloat)_mm512_shuffle_f32x4(odd_low, odd_high, 0xdd);
  }
}
#else
static inline void transpose_tile(vfloat rows[VECTOR_WIDTH]) { vtranspose(rows); }
#endif

/*
 * accumulators[r] (lane c = column j0 + c) continues its chain over depths [p0, p1) for rows
 * r < ROWS (a constant in each inlined copy). B rows j0 + c for c < columns are read in place;
 * lanes beyond `columns` multiply zeros. `next`, when not NULL, is the next tile's B rows (one
 * contiguous block of VECTOR_WIDTH·k floats): each step prefetches its share of it, so the
 * next tile arrives while this one computes (the hardware prefetchers do not follow the
 * VECTOR_WIDTH row streams a tile reads at once).
 */
static inline __attribute__((always_inline)) void
chain_tile(const gemm_problem *g, int rows, int64_t j0, int columns, int64_t p0, int64_t p1,
           vfloat accumulators[CHAINED_ROWS], const float *next) {
  const float *b = g->b + j0 * g->k;
  int64_t p = p0;
  for (; p + VECTOR_WIDTH <= p1; p += VECTOR_WIDTH) {
    /* Step p / VECTOR_WIDTH of k / VECTOR_WIDTH: VECTOR_WIDTH lines of the next tile. */
    if (next) {
      for (int line = 0; line < VECTOR_WIDTH; line++)
        __builtin_prefetch(next + p * VECTOR_WIDTH + line * 16, 0, PREFETCH_LOCALITY);
    }
    vfloat tile[VECTOR_WIDTH];
    for (int c = 0; c < VECTOR_WIDTH; c++)
      tile[c] = c < columns ? vload(b + c * g->k + p) : (vfloat){0};
    transpose_tile(tile); /* tile[q] lane c = B(p + q, j0 + c) */
    for (int q = 0; q < VECTOR_WIDTH; q++) {
      vfloat weights = in_register(tile[q]);
      for (int r = 0; r < rows; r++)
        accumulators[r] += vbroadcast(g->a[r * g->k + p + q]) * weights;
    }
  }
  for (; p < p1; p++) {
    vfloat weights = {0};
    for (int c = 0; c < columns; c++) weights[c] = b[c * g->k + p];
    for (int r = 0; r < rows; r++) accumulators[r] += vbroadcast(g->a[r * g->k + p]) * weights;
  }
}

/* C[r, j0..j0+columns) for r < rows: slice by slice, each slice's chains added to C in order. */
static inline __attribute__((always_inline)) void
chained_columns(const gemm_problem *g, int rows, int64_t j0, int columns, const float *next) {
  for (int64_t p0 = 0; p0 < g->k; p0 += GEMM_SLICE_DEPTH) {
    int64_t p1 = g->k - p0 < GEMM_SLICE_DEPTH ? g->k : p0 + GEMM_SLICE_DEPTH;
    vfloat accumulators[CHAINED_ROWS] = {{0}};
    chain_tile(g, rows, j0, columns, p0, p1, accumulators, next);
    for (int r = 0; r < rows; r++) {
      float *target = g->c + r * g->n + j0;
      vfloat sum = accumulators[r];
      if (p0 > 0) {
        if (columns == VECTOR_WIDTH) {
          sum += vload(target);
        } else {
          for (int c = 0; c < columns; c++) sum[c] += target[c];
        }
      }
      if (columns == VECTOR_WIDTH) vstore(target, sum);
      else memcpy(target, &sum, (size_t)columns * sizeof(float));
    }
  }
}

static void chained_task(void *context, size_t index, int thread) {
  (void)thread;
  const gemm_problem *g = context;
  int64_t first, last;
  chunk_range((int64_t)index, TASK_COLUMNS, g->n, &first, &last);
  for (int64_t j0 = first; j0 < last; j0 += VECTOR_WIDTH) {
    int columns = last - j0 < VECTOR_WIDTH ? (int)(last - j0) : VECTOR_WIDTH;
    const float *next = j0 + 2 * VECTOR_WIDTH <= g->n ? g->b + (j0 + VECTOR_WIDTH) * g->k : NULL;
    /* The row count a constant in each copy, so the accumulators stay in registers. */
    switch (g->m) {
      case 1: chained_columns(g, 1, j0, columns, next); break;
      case 2: chained_columns(g, 2, j0, columns, next); break;
      case 3: chained_columns(g, 3, j0, columns, next); break;
      case 4: chained_columns(g, 4, j0, columns, next); break;
      case 5: chained_columns(g, 5, j0, columns, next); break;
      case 6: chained_columns(g, 6, j0, columns, next); break;
      case 7: chained_columns(g, 7, j0, columns, next); break;
      case 8: chained_columns(g, 8, j0, columns, next); break;
      default: abort(); /* m ≤ CHAINED_ROWS is the caller's promise */
    }
  }
}

static void matmul_gemm_order(const gemm_problem *g) {
  if (g->m == 0 || g->n == 0) return;
  if (g->k == 0) {
    memset(g->c, 0, (size_t)(g->m * g->n) * sizeof(float));
    return;
  }
  double work = (double)g->m * g->n * g->k;
  if (g->transpose_b && g->m <= CHAINED_ROWS) {
    path_taken(PATH_GEMM_ORDER_CHAINED, work);
    bool share = (double)g->m * g->n * g->k >= PARALLEL_WORK;
    run_maybe_parallel((size_t)chunk_count(g->n, TASK_COLUMNS), chained_task, (void *)g, share);
    return;
  }
  /* B [k×n] at any m, and B [n×k] with more rows: the panels copy B cheaply or pay it back. */
  path_taken(PATH_GEMM_ORDER_GEMM, work);
  gemm_own(g, true);
}

void kernel_matmul_gemm_order(const product_arguments *call) {
  gemm_problem problem = {call->a, call->b, call->c, call->m, call->n, call->k,
                          false, call->transpose_b, 1.0f, 0.0f};
  matmul_gemm_order(&problem);
}
