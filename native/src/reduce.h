/*
 * Row reductions with float64 accumulation, written with explicit vectors. (GCC's
 * `omp simd reduction` keeps its per-lane partial sums in stack memory and, for mixed
 * float/double code, falls back to gathers: several times slower than this.)
 * Values are widened to double before they are multiplied and added, so long rows and large
 * dynamic ranges lose nothing to the summation. Accumulators are register-wide double vectors
 * (half as many lanes as a float vector), two of them to hide the add latency.
 */
#ifndef TEAMTR_REDUCE_H
#define TEAMTR_REDUCE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "simd.h"

#define HALF_WIDTH (VECTOR_WIDTH / 2)
#define REDUCE_INLINE static inline __attribute__((always_inline))

typedef float vhalf __attribute__((vector_size(HALF_WIDTH * sizeof(float))));
typedef double vwide __attribute__((vector_size(HALF_WIDTH * sizeof(double))));

/* HALF_WIDTH floats from x, as doubles. */
REDUCE_INLINE vwide widen(const float *x) {
  vhalf half;
  memcpy(&half, x, sizeof half);
  return __builtin_convertvector(half, vwide);
}

REDUCE_INLINE double wide_sum(vwide first, vwide second) {
  vwide both = first + second;
  double total = 0;
  for (int lane = 0; lane < HALF_WIDTH; lane++) total += both[lane];
  return total;
}

/*
 * Defines reduce_NAME(parameters): Σ over j < n of TERM(j), where TERM uses widen(p + j)
 * for vector lanes and SCALAR(j) for the leftover entries.
 */
#define DEFINE_REDUCTION(NAME, PARAMETERS, TERM, SCALAR)                      \
  REDUCE_INLINE double NAME PARAMETERS {                                      \
    vwide first = {0}, second = {0};                                          \
    int64_t j = 0;                                                            \
    for (; j + 2 * HALF_WIDTH <= n; j += 2 * HALF_WIDTH) {                    \
      first += TERM(j);                                                       \
      second += TERM(j + HALF_WIDTH);                                         \
    }                                                                         \
    for (; j + HALF_WIDTH <= n; j += HALF_WIDTH) first += TERM(j);            \
    double total = wide_sum(first, second);                                   \
    for (; j < n; j++) total += SCALAR(j);                                    \
    return total;                                                             \
  }

#define SUM_TERM(j) widen(x + (j))
#define SUM_SCALAR(j) (double)x[j]
/* Σ x_j */
DEFINE_REDUCTION(reduce_sum, (const float *x, int64_t n), SUM_TERM, SUM_SCALAR)

#define SQUARES_TERM(j) (widen(x + (j)) * widen(x + (j)))
#define SQUARES_SCALAR(j) ((double)x[j] * (double)x[j])
/* Σ x_j² */
DEFINE_REDUCTION(reduce_squares, (const float *x, int64_t n), SQUARES_TERM, SQUARES_SCALAR)

#define DOT_TERM(j) (widen(x + (j)) * widen(y + (j)))
#define DOT_SCALAR(j) ((double)x[j] * (double)y[j])
/* Σ x_j·y_j */
DEFINE_REDUCTION(reduce_dot, (const float *x, const float *y, int64_t n), DOT_TERM, DOT_SCALAR)

#define DOT3_TERM(j) (widen(x + (j)) * widen(y + (j)) * widen(z + (j)))
#define DOT3_SCALAR(j) ((double)x[j] * (double)y[j] * (double)z[j])
/* Σ x_j·y_j·z_j */
DEFINE_REDUCTION(reduce_dot3, (const float *x, const float *y, const float *z, int64_t n),
                 DOT3_TERM, DOT3_SCALAR)

#define CENTERED_TERM(j) ((widen(x + (j)) - center) * (widen(x + (j)) - center))
#define CENTERED_SCALAR(j) (((double)x[j] - center) * ((double)x[j] - center))
/* Σ (x_j − center)² */
DEFINE_REDUCTION(reduce_centered_squares, (const float *x, double center, int64_t n),
                 CENTERED_TERM, CENTERED_SCALAR)

#define DOT3_CENTERED_TERM(j) (widen(x + (j)) * widen(y + (j)) * (widen(z + (j)) - center))
#define DOT3_CENTERED_SCALAR(j) ((double)x[j] * (double)y[j] * ((double)z[j] - center))
/* Σ x_j·y_j·(z_j − center) */
DEFINE_REDUCTION(reduce_dot3_centered,
                 (const float *x, const float *y, const float *z, double center, int64_t n),
                 DOT3_CENTERED_TERM, DOT3_CENTERED_SCALAR)

/* Largest entry (−∞ when n = 0); NaN entries are ignored here, callers let NaN show later. */
REDUCE_INLINE float reduce_max(const float *x, int64_t n) {
  vfloat maximum = vbroadcast(-INFINITY);
  int64_t j = 0;
  for (; j + VECTOR_WIDTH <= n; j += VECTOR_WIDTH) {
    vfloat value = vload(x + j);
    maximum = vselect(value > maximum, value, maximum);
  }
  float result = vmax(maximum);
  for (; j < n; j++) result = x[j] > result ? x[j] : result;
  return result;
}

#endif
