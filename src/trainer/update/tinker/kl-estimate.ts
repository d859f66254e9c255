import type { UnitTokens } from '../token-grid.js';

/**
 * The token KL of an update from the log-probs of the sampled tokens alone (docs/method.md §3,
 * "Agents on a Tinker service"). A service returns log π(x | prefix) of given tokens only, not
 * whole distributions, so the exact KL of a local update cannot be computed. At each of the
 * agent's positions t, with x_t the token π_old sampled there and
 *
 *     r_t = exp(ℓ_new(x_t) − ℓ_old(x_t)) = π_new(x_t | prefix) / π_old(x_t | prefix),
 *
 * the k3 estimator k3_t = (r_t − 1) − log r_t is ≥ 0 and unbiased for the token's
 * KL(π_old ‖ π_new): E_{x∼π_old}[r − 1] = 0 and E_{x∼π_old}[−log r] = KL(π_old ‖ π_new).
 * Likewise ½|r_t − 1| is unbiased for the token's total variation, ½·E_{x∼π_old}|r − 1| = TV.
 * The mean token KL is estimated by the mean of k3 over the agent's T tokens,
 * K̂ = Σ_t k3_t / T, and its standard error treats trajectories as the independent units (a
 * trajectory's tokens are correlated): with S_j = Σ of k3 over trajectory j's n_j tokens and
 * m trajectories, SE = √(m/(m−1) · Σ_j (S_j − K̂·n_j)²) / T (null when m < 2).
 *
 * Unbiasedness needs x_t ∼ π_old itself: tokens sampled at temperature 1 by the weights the
 * update started from, which is what a stage's batch is. `reference` holds ℓ_old from a
 * forward pass of those weights (not the sampler's recorded log-probs) so that an unchanged
 * model estimates exactly 0.
 */
export interface KlEstimate {
  /** K̂, the mean of k3 over the unit's tokens. */
  mean: number;
  /** Its standard error over trajectories (null with fewer than two). */
  standardError: number | null;
  /** The largest per-token k3. */
  max: number;
  /** Per token, in flat scoring order: k3_t and ½|r_t − 1|. */
  perToken: Float64Array;
  perTokenTotalVariation: Float64Array;
}

export function estimateTokenKl(
  tokens: UnitTokens,
  reference: ArrayLike<number>,
  current: ArrayLike<number>,
): KlEstimate {
  const count = tokens.totalTokens;
  const perToken = new Float64Array(count);
  const perTokenTotalVariation = new Float64Array(count);
  const rowSums = new Float64Array(tokens.rows);
  const rowCounts = new Float64Array(tokens.rows);
  let sum = 0;
  let max = 0;
  for (let index = 0; index < count; index++) {
    const logRatio = current[index]! - reference[index]!;
    const ratio = Math.exp(logRatio);
    const k3 = Math.max(0, ratio - 1 - logRatio);
    perToken[index] = k3;
    perTokenTotalVariation[index] = 0.5 * Math.abs(ratio - 1);
    const row = Math.floor(tokens.gridIndex[index]! / tokens.length);
    rowSums[row]! += k3;
    rowCounts[row]! += 1;
    sum += k3;
    max = Math.max(max, k3);
  }
  if (count === 0)
    return { mean: 0, standardError: null, max: 0, perToken, perTokenTotalVariation };
  const mean = sum / count;
  let clusters = 0;
  let squares = 0;
  for (let row = 0; row < tokens.rows; row++) {
    if (rowCounts[row] === 0) continue;
    clusters++;
    squares += (rowSums[row]! - mean * rowCounts[row]!) ** 2;
  }
  const standardError =
    clusters >= 2 ? Math.sqrt((clusters / (clusters - 1)) * squares) / count : null;
  return { mean, standardError, max, perToken, perTokenTotalVariation };
}
