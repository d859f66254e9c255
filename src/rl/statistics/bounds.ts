/**
 * One-sided confidence bounds on a mean. Each says what it assumes; a bound "at confidence
 * 1 − α" lies below the true mean with probability at least 1 − α over the sample.
 *
 * - normal: mean − z_{1−α}·SE. Asymptotic; too optimistic for small or heavy-tailed samples.
 * - empirical Bernstein (Maurer & Pontil 2009, Theorem 4): for n ≥ 2 i.i.d. values known a priori
 *   to lie in [low, high], with probability ≥ 1 − α
 *     E X ≥ X̄ − √(2·V·ln(2/α)/n) − 7·(high − low)·ln(2/α) / (3·(n − 1)),
 *   V the sample variance (n − 1 denominator). Exact at every n, whatever the distribution, but
 *   only for bounded values: the range must hold before looking at the data.
 */
import { TeamtrError } from '../../util/errors.js';
import type { NumberArray } from '../layout.js';
import { meanWithStandardError, sampleVariance } from './descriptive.js';
import { normalQuantile } from './normal.js';

function checkAlpha(alpha: number, caller: string): void {
  if (!(alpha > 0 && alpha < 1)) {
    throw new TeamtrError(
      `${caller}: alpha (the error rate) must lie strictly between 0 and 1, got ${alpha}; ` +
        'a bound at 95% confidence has alpha 0.05',
    );
  }
}

/** mean − z_{1−α}·standardError (NaN when the standard error is). */
export function normalLowerBound({
  mean,
  standardError,
  alpha,
}: {
  mean: number;
  standardError: number;
  alpha: number;
}): number {
  checkAlpha(alpha, 'normalLowerBound');
  return mean - normalQuantile(1 - alpha) * standardError;
}

/**
 * The empirical-Bernstein deviation at error rate α: the amount by which the sample mean of
 * `values` (each within `range`) may exceed — or, by symmetry, fall short of — the true mean,
 * with probability at most α. NaN below two values.
 */
export function empiricalBernsteinRadius({
  values,
  range,
  alpha,
}: {
  values: NumberArray;
  /** Bounds every value is known to respect before sampling. */
  range: { low: number; high: number };
  alpha: number;
}): number {
  const caller = 'empiricalBernsteinRadius';
  checkAlpha(alpha, caller);
  const width = range.high - range.low;
  if (!(width >= 0) || !Number.isFinite(width)) {
    throw new TeamtrError(
      `${caller}: range must be finite with low ≤ high, got [${range.low}, ${range.high}]`,
    );
  }
  for (let index = 0; index < values.length; index++) {
    if (!(values[index] >= range.low && values[index] <= range.high)) {
      throw new TeamtrError(
        `${caller}: value ${values[index]} at index ${index} lies outside the stated range ` +
          `[${range.low}, ${range.high}]; the bound holds only for values known to lie in it`,
      );
    }
  }
  const count = values.length;
  if (count < 2) return Number.NaN;
  const logTerm = Math.log(2 / alpha);
  const variance = sampleVariance(values);
  return Math.sqrt((2 * variance * logTerm) / count) + (7 * width * logTerm) / (3 * (count - 1));
}

/** X̄ − empiricalBernsteinRadius: a lower bound on E X at confidence 1 − α. */
export function empiricalBernsteinLowerBound(options: {
  values: NumberArray;
  range: { low: number; high: number };
  alpha: number;
}): number {
  const radius = empiricalBernsteinRadius(options);
  return meanWithStandardError(options.values).mean - radius;
}

/**
 * Wilson's score interval for a binomial proportion (successes of trials) at two-sided error α:
 * the interval a measured coverage rate or violation rate is reported with. Stays within
 * [0, 1] and is sensible at 0 or all successes, unlike p̂ ± z·√(p̂(1 − p̂)/n).
 */
export function binomialInterval({
  successes,
  trials,
  alpha = 0.05,
}: {
  successes: number;
  trials: number;
  /** @default 0.05 */
  alpha?: number;
}): [number, number] {
  checkAlpha(alpha, 'binomialInterval');
  if (!(Number.isInteger(trials) && trials > 0 && successes >= 0 && successes <= trials)) {
    throw new TeamtrError(
      `binomialInterval: need 0 ≤ successes ≤ trials and trials > 0, got ${successes} of ${trials}`,
    );
  }
  const z = normalQuantile(1 - alpha / 2);
  const rate = successes / trials;
  const denominator = 1 + (z * z) / trials;
  const center = (rate + (z * z) / (2 * trials)) / denominator;
  const half =
    (z * Math.sqrt((rate * (1 - rate)) / trials + (z * z) / (4 * trials * trials))) / denominator;
  // At 0 or all successes one end is exactly 0 or 1 (rounding would leave 3e-17).
  return [
    successes === 0 ? 0 : Math.max(0, center - half),
    successes === trials ? 1 : Math.min(1, center + half),
  ];
}
