/**
 * The standard normal distribution: its CDF and quantile, for normal-approximation intervals and
 * one-sided confidence bounds. Float64 throughout.
 */
import { TeamtrError } from '../../util/errors.js';

/**
 * Standard normal CDF Φ(x) = ½·erfc(−x/√2).
 *
 * erfc comes from two expansions chosen by |x|, each without cancellation:
 * - |z| < 3 (z = x/√2): erf(z) = (2/√π)·e^(−z²)·Σ_n 2ⁿ z^(2n+1) / (1·3·…·(2n+1)), all terms
 *   positive, so it is accurate to a few ulps;
 * - |z| ≥ 3: the continued fraction erfc(z) = (e^(−z²)/√π) · 1/(z + ½/(z + 1/(z + 3/2/(z + …)))),
 *   evaluated bottom-up with enough terms for double precision at z ≥ 3.
 */
export function normalCumulative(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  const z = Math.abs(x) / Math.SQRT2;
  const upperTail = 0.5 * complementaryErrorFunction(z); // P(X > |x|)
  return x >= 0 ? 1 - upperTail : upperTail;
}

function complementaryErrorFunction(z: number): number {
  if (z === Infinity) return 0;
  if (z < 3) {
    let term = z;
    let sum = z;
    for (let n = 1; n < 200 && term > 1e-17 * sum; n++) {
      term *= (2 * z * z) / (2 * n + 1);
      sum += term;
    }
    return 1 - (2 / Math.sqrt(Math.PI)) * Math.exp(-z * z) * sum;
  }
  // Continued fraction K(z) = z + (1/2)/(z + 1/(z + (3/2)/(z + 2/(z + …)))).
  let fraction = z;
  for (let k = 60; k >= 1; k--) fraction = z + k / 2 / fraction;
  return Math.exp(-z * z) / Math.sqrt(Math.PI) / fraction;
}

/**
 * The standard normal quantile z with Φ(z) = probability, for 0 < probability < 1, by Newton's
 * method on Φ (Φ' = standard normal density) from a bracketing start, then bisection safeguards.
 * Used for one-sided lower bounds: mean − z(confidence)·standardError.
 */
export function normalQuantile(probability: number): number {
  if (!(probability > 0 && probability < 1)) {
    throw new TeamtrError(
      `normalQuantile: probability must lie strictly between 0 and 1 (got ${probability}); ` +
        'a confidence level such as 0.95 is expected',
    );
  }
  if (probability < 0.5) return -normalQuantile(1 - probability);
  if (probability === 0.5) return 0;
  let low = 0;
  let high = 40;
  let z = 1;
  for (let iteration = 0; iteration < 100; iteration++) {
    const error = normalCumulative(z) - probability;
    if (error === 0) return z;
    if (error > 0) high = z;
    else low = z;
    const density = Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
    let next = z - error / density;
    if (!(next > low && next < high)) next = 0.5 * (low + high);
    if (Math.abs(next - z) <= 1e-15 * Math.max(1, Math.abs(z))) return next;
    z = next;
  }
  return z;
}
