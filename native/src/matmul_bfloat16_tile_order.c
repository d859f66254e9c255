/*
 * The AMX tiles' sums (matmul_bfloat16_tiles.c) on AVX-512 lanes, bit for bit: the path of the
 * tile order on a host without tiles that is told to reproduce them (TEAMTR_AMX=lanes), so a
 * run started on an AMX host resumes on another with the same bits, and the tests check the
 * order on any AVX-512 host.
 *
 * TDPBF16PS is specified (Intel SDM) as, for each entry of C and each 32-value block of k: two
 * float32 sums from zero, one over the block's even positions and one over its odd ones, each a
 * chain of multiply-adds in k order with subnormal inputs read as zero and subnormal results
 * flushed (DAZ, FTZ, round to nearest even); then C + (even + odd), flushed the same way. On the
 * Xeon we measured, 60,000 of 60,000 random sums agreed with that to the bit (magnitudes over
 * 2⁻²⁰…2²⁰). The tile path keeps one such total per part of A, so here each entry keeps six
 * chains per block (even and odd of each part) and three totals, added (1 + 2) + 3 at the end.
 * MXCSR's DAZ and FTZ bits give the lanes the tiles' subnormal rules while the sums run; they
 * are restored before the totals are added and C written, as the tile path adds them outside
 * the tiles.
 *
 * Lanes run along C's columns, one chain per lane, so B's 16 rows × 32 values of a block are
 * transposed in registers (16 × 16 pairs) and each pair split into its even and odd value: about
 * half the speed of the lanes' own order for one row (76 against 38 µs for 1536×576, two
 * threads), and each extra row adds its six chains.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bfloat16_product.h"
#include "parallel.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include "bfloat16_tiles.h"

#define GROUP 16 /* C columns (B rows) a register group holds */
#define DEPTH 32 /* k values of one tile instruction */
/* Rows of A whose totals a task holds at once (more rows run in chunks, B transposed again). */
#define ROW_CHUNK 8

typedef struct {
  const bfloat16_problem *problem;
  const float *parts; /* m rows × PARTS × k */
  int64_t columns;    /* per task, a multiple of GROUP */
} order_job;

/*
 * Sums of A's rows [r0, r0 + rows) for C columns [j, j + 16) in the tiles' order: per row,
 * its three part totals at totals[row·3 + part]. B's lines two blocks ahead are fetched meanwhile.
 */
static void group_sums(const order_job *job, int64_t j, int64_t r0, int64_t rows, __m512 *totals) {
  const bfloat16_problem *g = job->problem;
  const int64_t k = g->k, blocks = k / DEPTH;
  const uint16_t *b = g->b + j * k;
  const __m512i upper = _mm512_set1_epi32((int)0xffff0000u);
  for (int64_t i = 0; i < rows * PARTS; i++) totals[i] = _mm512_setzero_ps();
  for (int64_t block = 0; block < blocks; block++) {
    vfloat pairs[GROUP];
    for (int row = 0; row < GROUP; row++)
      pairs[row] = (vfloat)_mm512_loadu_ps((const float *)(b + row * k + block * DEPTH));
    if (block + 2 < blocks)
      for (int row = 0; row < GROUP; row++)
        __builtin_prefetch(b + row * k + (block + 2) * DEPTH, 0, 3);
    vtranspose(pairs); /* pairs[q] lane i: B row j + i, values 2q and 2q + 1 of the block */
    for (int64_t r = 0; r < rows; r++) {
      const float *part = job->parts + (r0 + r) * PARTS * k + block * DEPTH;
      __m512 even[PARTS], odd[PARTS];
      for (int s = 0; s < PARTS; s++) even[s] = odd[s] = _mm512_setzero_ps();
      for (int q = 0; q < GROUP; q++) {
        __m512i pair = _mm512_castps_si512((__m512)pairs[q]);
        __m512 low = _mm512_castsi512_ps(_mm512_slli_epi32(pair, 16));
        __m512 high = _mm512_castsi512_ps(_mm512_and_si512(pair, upper));
        for (int s = 0; s < PARTS; s++) {
          even[s] = _mm512_fmadd_ps(_mm512_set1_ps(part[s * k + 2 * q]), low, even[s]);
          odd[s] = _mm512_fmadd_ps(_mm512_set1_ps(part[s * k + 2 * q + 1]), high, odd[s]);
        }
      }
      for (int s = 0; s < PARTS; s++)
        totals[r * PARTS + s] = _mm512_add_ps(totals[r * PARTS + s], _mm512_add_ps(even[s], odd[s]));
    }
  }
}

static void order_task(void *context, size_t index, int thread) {
  (void)thread;
  const order_job *job = context;
  const bfloat16_problem *g = job->problem;
  int64_t j0, j1;
  chunk_range((int64_t)index, job->columns, g->n, &j0, &j1);
  __m512 totals[ROW_CHUNK * PARTS];
  for (int64_t j = j0; j < j1; j += GROUP) {
    for (int64_t r0 = 0; r0 < g->m; r0 += ROW_CHUNK) {
      int64_t rows = g->m - r0 < ROW_CHUNK ? g->m - r0 : ROW_CHUNK;
      unsigned int mode = _mm_getcsr();
      _mm_setcsr(mode | DENORMALS_OFF);
      group_sums(job, j, r0, rows, totals);
      _mm_setcsr(mode);
      for (int64_t r = 0; r < rows; r++) {
        const __m512 *part = &totals[r * PARTS];
        store_totals(g, g->c + (r0 + r) * g->n + j, part[0], part[1], part[2]);
      }
    }
  }
}

void matmul_bfloat16_tile_order_lanes(const bfloat16_problem *g) {
  float *parts = pool_scratch(0, 3, (size_t)(g->m * PARTS * g->k) * sizeof(float));
  if (!parts) abort(); /* out of memory for three copies of a few rows: nothing sane to return */
  for (int64_t r = 0; r < g->m; r++) split_parts(g->a + r * g->k, g->k, parts + r * PARTS * g->k);
  order_job job = {g, parts, few_row_columns(g->n)};
  bool share = (double)g->m * g->n * g->k >= PARALLEL_WORK;
  run_maybe_parallel((size_t)chunk_count(g->n, job.columns), order_task, &job, share);
}

#else

void matmul_bfloat16_tile_order_lanes(const bfloat16_problem *g) {
  (void)g;
  abort(); /* unreachable: the tile order is off in builds without AVX-512 */
}

#endif
