/*
 * Portable SIMD through GCC/Clang vector extensions: `vfloat` is VECTOR_WIDTH floats wide
 * (16 with AVX-512, 8 with AVX/AVX2, 4 elsewhere: SSE, NEON), matching the target's registers,
 * and the compiler emits the instructions -march allows. Loads and stores go through memcpy so
 * any alignment is fine.
 */
#ifndef TEAMTR_SIMD_H
#define TEAMTR_SIMD_H

#include <string.h>

#if defined(__AVX512F__)
#define VECTOR_WIDTH 16
#elif defined(__AVX__)
#define VECTOR_WIDTH 8
#else
#define VECTOR_WIDTH 4
#endif

typedef float vfloat __attribute__((vector_size(VECTOR_WIDTH * sizeof(float))));

static inline vfloat vload(const float *source) {
  vfloat value;
  memcpy(&value, source, sizeof value);
  return value;
}

static inline void vstore(float *target, vfloat value) { memcpy(target, &value, sizeof value); }

/*
 * value − (+0) is value for every float, −0 included, so GCC drops the subtraction and
 * broadcasts straight from memory (a load-port vbroadcastss). The earlier 0 + value was not
 * an identity (it turns −0 into +0): GCC kept a scalar add and broadcast from a register, a
 * shuffle that Intel cores issue on the port of their second FMA unit — in an sgemm inner loop
 * one shuffle per FMA, which held our kernels to ~70 GFLOP/s per core on a Xeon where OpenBLAS
 * reached 106 (AMD cores shuffle on other pipes, so it did not show there). No result changes:
 * accumulators start at +0, and ±0·b adds nothing to them either way.
 */
static inline vfloat vbroadcast(float value) { return value - (vfloat){0}; }

/*
 * Keeps a loaded vector in a register: without this GCC folds the load into every
 * multiply-add that uses it (one load per FMA instead of one per row or column of a register
 * block), and a kernel becomes load-bound at half the FMA rate.
 */
static inline vfloat in_register(vfloat value) {
  __asm__("" : "+v"(value));
  return value;
}

typedef int vint __attribute__((vector_size(VECTOR_WIDTH * sizeof(int))));

/* Four floats, whatever VECTOR_WIDTH: a row of a 4 × 4 block of results, stored together. */
typedef float quad __attribute__((vector_size(4 * sizeof(float))));

/*
 * Transposes a VECTOR_WIDTH × VECTOR_WIDTH tile held in `rows`, in registers. Stage w swaps
 * the off-diagonal w×w blocks of every 2w×2w block (w = width/2, ..., 2, 1); after all stages
 * every element has moved from (r, c) to (c, r). Each stage is one two-input shuffle per row.
 */
#define LOW_LANE(w, j) (((j) & (w)) ? VECTOR_WIDTH + (j) - (w) : (j))
#define HIGH_LANE(w, j) (((j) & (w)) ? VECTOR_WIDTH + (j) : (j) + (w))
#if VECTOR_WIDTH == 16
#define LANES(f, w) {f(w, 0), f(w, 1), f(w, 2), f(w, 3), f(w, 4), f(w, 5), f(w, 6), f(w, 7), \
                     f(w, 8), f(w, 9), f(w, 10), f(w, 11), f(w, 12), f(w, 13), f(w, 14), f(w, 15)}
#elif VECTOR_WIDTH == 8
#define LANES(f, w) {f(w, 0), f(w, 1), f(w, 2), f(w, 3), f(w, 4), f(w, 5), f(w, 6), f(w, 7)}
#else
#define LANES(f, w) {f(w, 0), f(w, 1), f(w, 2), f(w, 3)}
#endif

static inline void transpose_stage(vfloat rows[VECTOR_WIDTH], int w, vint low, vint high) {
  for (int r = 0; r < VECTOR_WIDTH; r++) {
    if (r & w) continue;
    vfloat first = rows[r], second = rows[r + w];
    rows[r] = __builtin_shuffle(first, second, low);
    rows[r + w] = __builtin_shuffle(first, second, high);
  }
}

/*
 * One stage of a butterfly over a tile of VECTOR_WIDTH vectors: pairs vectors w apart and
 * combines each pair through its `low` and `high` lane shuffles.
 */
typedef void (*butterfly_stage)(vfloat rows[VECTOR_WIDTH], int w, vint low, vint high);

/*
 * Runs `stage` for w = VECTOR_WIDTH / 2, …, 2, 1 with the shuffles that interleave the lanes of
 * the pair: the common skeleton of vtranspose and vsum_rows. Inlined with a constant `stage`,
 * it compiles to the same straight-line code as the stages written out.
 */
static inline void butterfly(vfloat rows[VECTOR_WIDTH], butterfly_stage stage) {
#if VECTOR_WIDTH == 16
  stage(rows, 8, (vint)LANES(LOW_LANE, 8), (vint)LANES(HIGH_LANE, 8));
#endif
#if VECTOR_WIDTH >= 8
  stage(rows, 4, (vint)LANES(LOW_LANE, 4), (vint)LANES(HIGH_LANE, 4));
#endif
  stage(rows, 2, (vint)LANES(LOW_LANE, 2), (vint)LANES(HIGH_LANE, 2));
  stage(rows, 1, (vint)LANES(LOW_LANE, 1), (vint)LANES(HIGH_LANE, 1));
}

static inline void vtranspose(vfloat rows[VECTOR_WIDTH]) { butterfly(rows, transpose_stage); }

/*
 * Horizontal sums of VECTOR_WIDTH vectors at once: lane j of the result is the sum of the lanes
 * of rows[j]. A reduction tree of the transpose's stages: stage w adds each pair of the two
 * shuffles, halving the live vectors (width − 1 shuffle pairs in all, about a third of the
 * instructions of transposing the tile and adding its rows). `rows` is used as scratch.
 */
static inline void sum_stage(vfloat rows[VECTOR_WIDTH], int w, vint low, vint high) {
  for (int r = 0; r < w; r++) {
    vfloat first = rows[r], second = rows[r + w];
    rows[r] = __builtin_shuffle(first, second, low) + __builtin_shuffle(first, second, high);
  }
}

#if VECTOR_WIDTH == 16
#include <immintrin.h>

/*
 * AVX-512: the same tree, each stage's two shuffles written with immediate-operand
 * instructions that pick exactly the lanes sum_stage's index vectors pick (128-bit block
 * shuffles, masked where a stage interleaves the two inputs' blocks, then pd unpacks and
 * masked movsldup/movshdup). GCC compiles the generic form's middle and last stages to
 * vpermt2ps, which needs index registers and a register copy per shuffle (it destroys an
 * input). Same additions of the same values, so the same bits (tested against the generic
 * form in the shared suite's products).
 */
static inline vfloat vsum_rows(vfloat rows[VECTOR_WIDTH]) {
  __m512 r[16];
  for (int i = 0; i < 16; i++) r[i] = (__m512)rows[i];
  for (int i = 0; i < 8; i++) /* w = 8: lane j ± 8 */
    r[i] = _mm512_add_ps(_mm512_shuffle_f32x4(r[i], r[i + 8], 0x44),
                         _mm512_shuffle_f32x4(r[i], r[i + 8], 0xEE));
  for (int i = 0; i < 4; i++) /* w = 4: 128-bit blocks of the pair, interleaved */
    r[i] = _mm512_add_ps(_mm512_mask_shuffle_f32x4(r[i], 0xF0F0, r[i + 4], r[i + 4], 0xA0),
                         _mm512_mask_shuffle_f32x4(r[i + 4], 0x0F0F, r[i], r[i], 0xF5));
  for (int i = 0; i < 2; i++) /* w = 2: 64-bit halves of each block */
    r[i] = _mm512_add_ps((__m512)_mm512_unpacklo_pd((__m512d)r[i], (__m512d)r[i + 2]),
                         (__m512)_mm512_unpackhi_pd((__m512d)r[i], (__m512d)r[i + 2]));
  /* w = 1: even and odd lanes */
  return (vfloat)_mm512_add_ps(_mm512_mask_moveldup_ps(r[0], 0xAAAA, r[1]),
                               _mm512_mask_movehdup_ps(r[1], 0x5555, r[0]));
}
#else
static inline vfloat vsum_rows(vfloat rows[VECTOR_WIDTH]) {
  butterfly(rows, sum_stage);
  return rows[0];
}
#endif

#define LANE_INDEX(w, j) (j)

/* mask lanes all-ones pick `chosen`, all-zeros pick `otherwise` (masks from vector compares). */
static inline vfloat vselect(vint mask, vfloat chosen, vfloat otherwise) {
  return (vfloat)(((vint)chosen & mask) | ((vint)otherwise & ~mask));
}

/* Largest lane; NaN lanes are ignored unless every lane is NaN. */
static inline float vmax(vfloat value) {
  float result = value[0];
  for (int lane = 1; lane < VECTOR_WIDTH; lane++) result = value[lane] > result ? value[lane] : result;
  return result;
}

static inline float vsum(vfloat value) {
  float total = 0;
  for (int lane = 0; lane < VECTOR_WIDTH; lane++) total += value[lane];
  return total;
}

#endif
