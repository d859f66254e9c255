/*
 * Untruncated sampling at temperature 1 (sampleRows in src/backend/types.ts), bit for bit as
 * the JavaScript reference computes it: the token drawn for a seed, and its log-probability,
 * do not depend on the backend. That rules out the float32 exp of softmax.c and any reordered
 * sum; what it leaves to speed up is everything around them:
 *
 * - exp is fdlibm's __ieee754_exp, which is what V8's Math.exp runs. For −700 < x ≤ 0 (all
 *   that x = logit − row maximum takes besides −∞, NaN and deep underflow) each of its
 *   branches is straight-line IEEE arithmetic, so eight doubles go through them at a time with
 *   the same operations in the same order; the rest take the scalar code with every branch.
 *   Contraction into FMA would change the rounding, so it is switched off for this file (the
 *   shared suite's exp sweep fails without the pragma).
 * - the sum and the threshold walk stay sequential in float64 (the order is the definition)
 *   but run at the adder's latency instead of the JavaScript loop's;
 * - rows are independent, so the pool takes blocks of rows;
 * - the drawn token's log-probability (gatherLogProbs' float32 formula, softmax.c) is taken
 *   while the row is still in L2, when asked for: a second kernel re-read every row of the
 *   64 × 49,152 logits from memory, one more pass and one more job a decode step.
 *
 * Against the JavaScript loop it replaces, 64 rows of 49,152 logits (one SmolLM2-shape decode
 * step at rollout batch size): 4–6× faster, measured on a loaded 2-core machine. Two rows side
 * by side in a task (their sums' chains in parallel) measured 1.00×: the exponentials'
 * arithmetic bounds it, not the sums' latency.
 */
#pragma GCC optimize("fp-contract=off")

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "parallel.h"

static const double ln2_hi = 6.93147180369123816490e-01;
static const double ln2_lo = 1.90821492927058770002e-10;
static const double inverse_ln2 = 1.44269504088896338700e+00;
static const double p1 = 1.66666666666666019037e-01;
static const double p2 = -2.77777777770155933842e-03;
static const double p3 = 6.61375632143793436117e-05;
static const double p4 = -1.65339022054652515390e-06;
static const double p5 = 4.13813679705723846039e-08;
static const double overflow_threshold = 7.09782712893383973096e+02;
static const double underflow_threshold = -7.45133219101941108420e+02;
static const double two_minus_1000 = 9.33263618503218878990e-302;
/* The vector path's lower end: k ≥ −1010, far from the subnormal results of k < −1021. */
static const double vector_lowest = -700.0;

static inline uint32_t high_word(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  return (uint32_t)(bits >> 32);
}

static inline double times_power_of_two(double y, int k) {
  uint64_t bits = (uint64_t)(0x3ff + k) << 52;
  double scale;
  memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

/* fdlibm's __ieee754_exp with every branch (V8 src/base/ieee754.cc). */
static double fdlibm_exp(double x) {
  uint32_t hx = high_word(x);
  int sign = (int)(hx >> 31);
  hx &= 0x7fffffff;
  if (hx >= 0x40862E42) {
    if (hx >= 0x7ff00000) {
      if (isnan(x)) return x + x;
      return sign == 0 ? x : 0.0;
    }
    if (x > overflow_threshold) return INFINITY;
    if (x < underflow_threshold) return 0.0;
  }
  if (x == 1.0) return 2.718281828459045; /* V8 returns the correctly rounded e here */
  double hi = 0, lo = 0;
  int k = 0;
  if (hx > 0x3fd62e42) {
    if (hx < 0x3FF0A2B2) {
      hi = sign ? x + ln2_hi : x - ln2_hi;
      lo = sign ? -ln2_lo : ln2_lo;
      k = 1 - sign - sign;
    } else {
      k = (int)(inverse_ln2 * x + (sign ? -0.5 : 0.5));
      double t = k;
      hi = x - t * ln2_hi;
      lo = t * ln2_lo;
    }
    x = hi - lo;
  } else if (hx < 0x3e300000) {
    return 1.0 + x;
  }
  double t = x * x;
  double c = x - t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * p5))));
  if (k == 0) return 1.0 - ((x * c) / (c - 2.0) - x);
  double y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
  if (k >= -1021) {
    if (k == 1024) return y * 2.0 * 8.98846567431157953865e+307;
    return times_power_of_two(y, k);
  }
  return times_power_of_two(y, k + 1000) * two_minus_1000;
}

#define LANES 8
typedef double vdouble __attribute__((vector_size(LANES * sizeof(double))));
typedef int64_t vlong __attribute__((vector_size(LANES * sizeof(int64_t))));

/* The double whose high word is `high` and low word 0: |x| ≥ it ⟺ fdlibm's hx ≥ high. */
static inline double from_high_word(uint32_t high) {
  uint64_t bits = (uint64_t)high << 32;
  double value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

typedef float vfloat8 __attribute__((vector_size(LANES * sizeof(float))));
typedef int32_t vint8 __attribute__((vector_size(LANES * sizeof(int32_t))));

static inline vdouble select_vector(vlong mask, vdouble when_true, vdouble when_false) {
  return (vdouble)(((vlong)when_true & mask) | ((vlong)when_false & ~mask));
}

/*
 * fdlibm's exp for −700 < x ≤ 0, every lane through the same operations as the scalar code:
 * k from the general reduction when |x| ≥ 1.5 ln2, k = −1 when 0.5 ln2 < |x| < 1.5 ln2
 * (x − (−1)·ln2_hi is the special case's x + ln2_hi exactly), k = 0 below that (then hi = x,
 * lo = 0 and 1 − ((0 − x·c/(2 − c)) − x) equals the k = 0 return 1 − (x·c/(c − 2) − x)
 * exactly, negation being exact), and 1 + x below 2^−28.
 */
static inline vdouble exp_nonpositive(vdouble x, double three_halves_ln2, double half_ln2,
                                      double tiny) {
  vlong general = x <= -three_halves_ln2;
  vlong reduced = x <= -half_ln2;
  vlong k_general = __builtin_convertvector(inverse_ln2 * x - 0.5, vlong); /* truncates */
  vlong k = (k_general & general) | (((vlong){0} - 1) & (reduced & ~general));
  vdouble t = __builtin_convertvector(k, vdouble);
  vdouble hi = x - t * ln2_hi;
  vdouble lo = t * ln2_lo;
  vdouble r = hi - lo;
  vdouble rr = r * r;
  vdouble c = r - rr * (p1 + rr * (p2 + rr * (p3 + rr * (p4 + rr * p5))));
  vdouble y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
  vlong scale_bits = (k + 0x3ff) << 52;
  vdouble scale;
  memcpy(&scale, &scale_bits, sizeof scale);
  return select_vector(x > -tiny, 1.0 + x, y * scale);
}

/* Whether every lane of a comparison's result is true. */
static inline bool all_lanes(vlong mask) {
#if defined(__AVX512F__)
  return _mm512_cmpneq_epi64_mask((__m512i)mask, _mm512_setzero_si512()) == 0xFF;
#else
  int every = 1;
  for (int lane = 0; lane < LANES; lane++) every &= mask[lane] != 0;
  return every;
#endif
}

/* total + values[0] + … + values[LANES − 1], left to right. */
static inline double add_lanes(double total, const double *values) {
  for (int lane = 0; lane < LANES; lane++) total += values[lane];
  return total;
}

/*
 * weights[j] = exp(logits[j] − maximum) in float64, as Math.exp computes it; returns their sum
 * added left to right. The sum is a chain of dependent additions; adding each block as soon as
 * it is computed lets that chain run while the next block's exponentials are computed.
 */
static double row_exponentials(const float *logits, double maximum, double *weights,
                               int64_t columns) {
  double total = 0;
  const double three_halves_ln2 = from_high_word(0x3FF0A2B2);
  const double half_ln2 = from_high_word(0x3fd62e43); /* hx > 0x3fd62e42 */
  const double tiny = from_high_word(0x3e300000);     /* 2^−28 */
  const vdouble stand_in = (vdouble){0} - 2.0;
  int64_t j = 0;
  for (; j + LANES <= columns; j += LANES) {
    vfloat8 narrow;
    memcpy(&narrow, logits + j, sizeof narrow);
    vdouble x = __builtin_convertvector(narrow, vdouble) - maximum;
    /* Lanes outside (−700, 0] (−∞, NaN, deep underflow) compute on a stand-in, then take
       the scalar code with every branch. */
    vlong in_range = (x > vector_lowest) & (x <= 0.0);
    vdouble value =
        exp_nonpositive(select_vector(in_range, x, stand_in), three_halves_ln2, half_ln2, tiny);
    if (!all_lanes(in_range))
      for (int lane = 0; lane < LANES; lane++)
        if (!in_range[lane]) value[lane] = fdlibm_exp(x[lane]);
    memcpy(weights + j, &value, sizeof value);
    /* The block before this one, read back from memory: scalar loads use the load ports,
       where taking lanes out of the register took shuffles from the vector math's port
       (64 × 49,152 logits, one thread: 1.29× less CPU time). */
    if (j > 0) total = add_lanes(total, weights + j - LANES);
  }
  if (j > 0) total = add_lanes(total, weights + j - LANES);
  for (; j < columns; j++) {
    weights[j] = fdlibm_exp((double)logits[j] - maximum);
    total += weights[j];
  }
  return total;
}

/* Math.max over the row: NaN if any entry is NaN, and +0 over −0. */
static float row_maximum(const float *logits, int64_t columns) {
  vfloat8 best = (vfloat8){0} - INFINITY;
  vint8 nan_seen = {0};
  int64_t j = 0;
  for (; j + LANES <= columns; j += LANES) {
    vfloat8 value;
    memcpy(&value, logits + j, sizeof value);
    nan_seen |= value != value;
    vint8 greater = value > best;
    best = (vfloat8)(((vint8)value & greater) | ((vint8)best & ~greater));
  }
  float maximum = -INFINITY;
  int any_nan = 0;
  for (int lane = 0; lane < LANES; lane++) {
    any_nan |= nan_seen[lane] != 0;
    maximum = best[lane] > maximum ? best[lane] : maximum;
  }
  for (; j < columns; j++) {
    float value = logits[j];
    any_nan |= value != value;
    maximum = value > maximum ? value : maximum;
  }
  if (any_nan) return NAN;
  if (maximum == 0.0f && signbit(maximum)) {
    for (int64_t i = 0; i < columns; i++)
      if (logits[i] == 0.0f && !signbit(logits[i])) return 0.0f;
  }
  return maximum;
}

static int32_t draw(const double *weights, int64_t columns, double threshold) {
  for (int64_t j = 0; j < columns; j++) {
    threshold -= weights[j];
    if (threshold < 0) return (int32_t)j;
  }
  for (int64_t j = columns - 1; j >= 0; j--)
    if (weights[j] > 0) return (int32_t)j;
  return 0;
}

typedef struct {
  const sample_rows_arguments *call;
  int64_t rows_per_task;
} sample_context;

static void sample_task(void *context, size_t index, int thread) {
  const sample_context *task = context;
  const sample_rows_arguments *call = task->call;
  int64_t begin, end;
  chunk_range((int64_t)index, task->rows_per_task, call->rows, &begin, &end);
  for (int64_t r = begin; r < end; r++) {
    /* Slot 0 is also row_log_prob's scratch: taken again for every row. */
    double *weights = pool_scratch(thread, 0, (size_t)call->columns * sizeof(double));
    if (!weights) abort();
    const float *logits = call->logits + r * call->columns;
    float maximum = row_maximum(logits, call->columns);
    double total = row_exponentials(logits, (double)maximum, weights, call->columns);
    call->maximum[r] = maximum;
    call->total[r] = total;
    double uniform = call->uniforms[r];
    if (!(uniform >= 0)) continue; /* negative (or NaN): no draw */
    int32_t token = draw(weights, call->columns, uniform * total);
    call->tokens[r] = token;
    if (call->log_probs)
      call->log_probs[r] = row_log_prob(logits, call->columns, token, thread);
  }
}

void kernel_sample_rows(const sample_rows_arguments *call) {
  sample_context context = {call, rows_per_task(call->rows, call->columns, 16384)};
  pool_run((size_t)chunk_count(call->rows, context.rows_per_task), sample_task, &context);
}
