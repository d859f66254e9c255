/*
 * Vectorizable float math. The C library's expf cannot be vectorized without -ffast-math,
 * which we do not use (NaN and infinity must keep IEEE semantics), so softmax, SiLU and GELU
 * would run one scalar expf per element. These inline versions compile to SIMD code inside
 * `#pragma omp simd` loops (-fopenmp-simd) and stay within ~2 ulp of expf.
 */
#ifndef TEAMTR_VECMATH_H
#define TEAMTR_VECMATH_H

#include <stdint.h>
#include <string.h>

static inline float bits_to_float(int32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* 2^n for integer n in [-126, 127], built directly in the exponent field. */
static inline float power_of_two(int32_t n) { return bits_to_float((n + 127) << 23); }

/*
 * e^x: x = n·ln2 + r with |r| <= ln2/2 (ln2 split in two parts so r is exact enough), e^r by
 * its degree-7 Taylor polynomial (truncation error < 1e-8 relative), and 2^n applied as two
 * halves so results that overflow become +inf and tiny ones underflow gradually to 0.
 * NaN propagates through the polynomial; ±inf land on the clamps and give +inf and 0.
 */
static inline float fast_expf(float x) {
  float clamped = x < -104.0f ? -104.0f : x;
  clamped = clamped > 89.0f ? 89.0f : clamped;
  float n = __builtin_rintf(clamped * 1.44269504088896341f);
  float r = __builtin_fmaf(n, -0.693359375f, clamped);
  r = __builtin_fmaf(n, 2.12194440e-4f, r);
  float p = 1.0f / 5040.0f;
  p = __builtin_fmaf(p, r, 1.0f / 720.0f);
  p = __builtin_fmaf(p, r, 1.0f / 120.0f);
  p = __builtin_fmaf(p, r, 1.0f / 24.0f);
  p = __builtin_fmaf(p, r, 1.0f / 6.0f);
  p = __builtin_fmaf(p, r, 0.5f);
  p = __builtin_fmaf(p, r, 1.0f);
  p = __builtin_fmaf(p, r, 1.0f);
  int32_t exponent = (int32_t)n;
  int32_t half = exponent >> 1;
  return p * power_of_two(half) * power_of_two(exponent - half);
}

/* Logistic sigmoid 1/(1 + e^(-x)): e^(-x) = inf gives exactly 0, e^(-x) = 0 gives exactly 1. */
static inline float fast_sigmoidf(float x) { return 1.0f / (1.0f + fast_expf(-x)); }

/*
 * tanh(u) = 1 - 2/(e^(2u) + 1): saturates to exactly ±1 for large |u| (the e^(2u) = inf and
 * e^(2u) = 0 ends). Near 0 the absolute error is ~1e-7, which is all GELU needs.
 */
static inline float fast_tanhf(float u) { return 1.0f - 2.0f / (fast_expf(2.0f * u) + 1.0f); }

#endif
