/**
 * Descriptive statistics: mean, variance, standard error, quantiles and the effective sample size
 * of importance weights, each written once.
 * Sums run left to right in float64 (a plain loop, never pairwise or compensated), so every
 * caller that used to keep its own copy gets the same numbers to the bit.
 */
import type { NumberArray } from '../layout.js';

/** A sample mean and the standard error of that mean. */
export interface MeanEstimate {
  mean: number;
  /**
   * s / √n with s the sample standard deviation (n − 1 in the denominator); NaN when n < 2
   * (one sample says nothing about its own noise).
   */
  standardError: number;
  count: number;
}

/** Σ values / n; NaN for an empty input. */
export function mean(values: NumberArray): number {
  let sum = 0;
  for (let index = 0; index < values.length; index++) sum += values[index];
  return values.length === 0 ? Number.NaN : sum / values.length;
}

/** Σ (values − center)², the numerator of every variance here. */
function squaredDeviations(values: NumberArray, center: number): number {
  let squares = 0;
  for (let index = 0; index < values.length; index++) {
    const deviation = values[index] - center;
    squares += deviation * deviation;
  }
  return squares;
}

/** Mean and standard error of `values` (NaN mean for an empty input). */
export function meanWithStandardError(values: NumberArray): MeanEstimate {
  const count = values.length;
  if (count === 0) return { mean: Number.NaN, standardError: Number.NaN, count };
  const center = mean(values);
  if (count < 2) return { mean: center, standardError: Number.NaN, count };
  const variance = squaredDeviations(values, center) / (count - 1);
  return { mean: center, standardError: Math.sqrt(variance / count), count };
}

/** Sample variance (n − 1 denominator); NaN when n < 2. */
export function sampleVariance(values: NumberArray): number {
  if (values.length < 2) return Number.NaN;
  return squaredDeviations(values, mean(values)) / (values.length - 1);
}

/** Standard error of the mean, s / √n; NaN when n < 2. */
export function standardError(values: NumberArray): number {
  return meanWithStandardError(values).standardError;
}

/**
 * The q-quantile of values sorted ascending, by linear interpolation between order statistics
 * (Hyndman & Fan's type 7, R's default): position q·(n − 1), then
 * sorted[⌊p⌋] + (p − ⌊p⌋)·(sorted[⌊p⌋ + 1] − sorted[⌊p⌋]). NaN for an empty input.
 */
export function quantileOfSorted(sorted: NumberArray, q: number): number {
  if (!(q >= 0 && q <= 1)) {
    throw new RangeError(`quantileOfSorted: q must lie in [0, 1], got ${q}`);
  }
  if (sorted.length === 0) return Number.NaN;
  const position = q * (sorted.length - 1);
  const lower = Math.floor(position);
  const upper = Math.min(lower + 1, sorted.length - 1);
  return sorted[lower] + (position - lower) * (sorted[upper] - sorted[lower]);
}

/** The q-quantile of unsorted values (a sorted copy; NaN values are an error). */
export function quantile(values: NumberArray, q: number): number {
  const sorted = Float64Array.from(values);
  if (sorted.some(Number.isNaN)) {
    throw new RangeError('quantile: a value is NaN; drop undefined values first');
  }
  return quantileOfSorted(sorted.sort(), q);
}

/**
 * Kish's effective sample size of importance weights W given as log W: (Σ W)² / Σ W², from 1
 * (one weight carries the sample) to n (all weights equal); 0 for no weights. Evaluated with the
 * largest log-weight factored out, exp(log W − max), so no single weight overflows the sums.
 */
export function effectiveSampleSize(logWeights: NumberArray): number {
  if (logWeights.length === 0) return 0;
  let largest = -Infinity;
  for (let index = 0; index < logWeights.length; index++) {
    largest = Math.max(largest, logWeights[index]);
  }
  let sum = 0;
  let squares = 0;
  for (let index = 0; index < logWeights.length; index++) {
    const scaled = Math.exp(logWeights[index] - largest);
    sum += scaled;
    squares += scaled * scaled;
  }
  return (sum * sum) / squares;
}
