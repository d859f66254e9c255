/**
 * The occupancy gap of update i as a total variation, estimated inside [0, 1].
 *
 * Q is the distribution of trajectories under the stale team (the one that sampled the batch),
 * P under the current one, whose earlier-updated agents moved; per trajectory W_{<i} = P/Q is
 * the product of those agents' token ratios (the other agents' factors cancel). The gap is
 * TV(P, Q) = Σ_x (Q(x) − P(x))_+, and since (Q − P)_+ is non-zero only where Q > 0,
 *
 *   TV(P, Q) = E_{x∼Q}[(1 − W(x))_+]        exactly, whatever P does off Q's support.
 *
 * Each term (1 − W)_+ lies in [0, 1], so the batch mean
 * - is unbiased (bias 0: no truncation, no self-normalisation),
 * - lies in [0, 1] like the quantity it estimates, whatever the tail of W: a trajectory whose
 *   weight explodes contributes 0, not |W − 1|/2 (½·mean|W − 1|, the older estimator, is also
 *   unbiased when P ≪ Q but unbounded: one heavy weight pushes it past 1),
 * - has variance at most TV·(1 − TV)/n, so its interval comes from a bounded-variable bound
 *   with a guarantee at every n: the empirical-Bernstein interval (statistics/bounds.ts), cut
 *   to [0, 1].
 */
import { TeamtrError } from '../util/errors.js';
import type { NumberArray } from './layout.js';
import { empiricalBernsteinRadius, meanWithStandardError } from './statistics/index.js';

export interface OccupancyGapEstimate {
  /** mean of (1 − W)_+ over the trajectories: an unbiased estimate of TV, in [0, 1]. */
  gap: number;
  /** s/√n of the terms (NaN below two trajectories), for a normal-approximation interval. */
  standardError: number;
  /**
   * Two-sided interval at confidence 1 − α (empirical Bernstein, each side at α/2), within
   * [0, 1]; [0, 1] itself below two trajectories.
   */
  interval: [number, number];
  /** The estimator's bias: 0 (stated, for records that compare estimators). */
  bias: 0;
  count: number;
}

/** (1 − W)_+ with W = exp(logRatio), exact near W = 1: −expm1 keeps the small digits. */
function shortfall(logRatio: number): number {
  return logRatio >= 0 ? 0 : -Math.expm1(logRatio);
}

/**
 * The occupancy gap of an update from the stale batch's log W_{<i} per trajectory (a value of
 * 0 where no earlier-updated agent spoke). docs/method.md §5; rl/improvement.ts `occupancyGap`
 * is the older ½·mean|W − 1|.
 */
export function occupancyGapEstimate({
  logRatioEarlierAgents,
  alpha = 0.05,
}: {
  /** [trajectories] Σ log(π_new/π_stale) over the earlier-updated agents' tokens. */
  logRatioEarlierAgents: NumberArray;
  /** Error rate of the interval. @default 0.05 */
  alpha?: number;
}): OccupancyGapEstimate {
  const terms = Float64Array.from({ length: logRatioEarlierAgents.length }, (_, index) => {
    const logRatio = logRatioEarlierAgents[index];
    if (Number.isNaN(logRatio)) {
      throw new TeamtrError(
        `occupancyGapEstimate: log W of trajectory ${index} is NaN; a log-probability of an ` +
          'earlier-updated agent is undefined there (check the scored tokens)',
      );
    }
    return shortfall(logRatio);
  });
  const { mean, standardError, count } = meanWithStandardError(terms);
  if (count < 2) return { gap: mean, standardError, interval: [0, 1], bias: 0, count };
  const radius = empiricalBernsteinRadius({
    values: terms,
    range: { low: 0, high: 1 },
    alpha: alpha / 2,
  });
  return {
    gap: mean,
    standardError,
    interval: [Math.max(0, mean - radius), Math.min(1, mean + radius)],
    bias: 0,
    count,
  };
}
