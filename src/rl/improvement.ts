/**
 * Estimates of an update's real effect, each with its noise (docs/method.md §5): the off-policy
 * estimate from the update's own batch, the measured change to the next fresh batch, and the
 * occupancy gap between a stale and a current team.
 */
import { ShapeError, TeamtrError } from '../util/errors.js';
import { expectLength, resolveTokenGrid, type NumberArray } from './layout.js';
import { effectiveSampleSize, meanWithStandardError, normalQuantile } from './statistics/index.js';

export interface OffPolicyImprovementResult {
  /** Mean of (W − 1)·(R − b): an unbiased estimate of J(π') − J(π). */
  estimate: number;
  standardError: number;
  /** estimate − z(confidence)·standardError (one-sided, normal approximation). */
  lowerBound: number;
  confidence: number;
  metrics: {
    /** Trajectories whose log W exceeded logWeightCap and were capped. */
    cappedCount: number;
    logWeightMax: number;
    /** (Σ W)² / Σ W², from 1 (one trajectory dominates) to rows (W ≡ 1). */
    effectiveSampleSize: number;
  };
}

/**
 * Off-policy estimate of the improvement from agent i's update, with a confidence bound.
 *
 * W_r = Π_{t: mask=1} π'(a_t)/π(a_t) is the likelihood ratio of trajectory r under the new and old
 * team: only agent i's factors differ, the other agents' and the verifier's cancel. Hence
 * E_π[W·R] = J(π') and E_π[W] = 1, so for a baseline b that does not depend on the trajectory
 * itself, E_π[(W − 1)·(R − b)] = J(π') − J(π); b only lowers the variance. log W is summed in log
 * space; W − 1 = expm1(min(log W, logWeightCap)): capping (counted in the metrics) trades a small
 * bias for a finite answer when one trajectory's weight explodes.
 *
 * The lower bound is the one-sided normal-approximation bound estimate − z·SE with Φ(z) =
 * confidence and SE = sample standard deviation / √rows. Importance weights are heavy-tailed, so
 * read it as a practical accept/reject test, not a guarantee; watch effectiveSampleSize.
 */
export function offPolicyImprovementEstimate({
  logProbs,
  oldLogProbs,
  mask,
  rows,
  rewards,
  baseline,
  confidence = 0.95,
  logWeightCap = 20,
}: {
  /** [rows, length] */
  logProbs: NumberArray;
  /** [rows, length] */
  oldLogProbs: NumberArray;
  mask: NumberArray;
  rows: number;
  /** [rows] team reward. */
  rewards: NumberArray;
  /** A constant, or [rows] (e.g. a leave-one-out group mean). */
  baseline: number | NumberArray;
  /** @default 0.95 */
  confidence?: number;
  /** @default 20 (W ≤ e²⁰ ≈ 4.9e8) */
  logWeightCap?: number;
}): OffPolicyImprovementResult {
  const caller = 'offPolicyImprovementEstimate';
  const { length } = resolveTokenGrid(mask, rows, caller);
  expectLength(logProbs, rows * length, 'logProbs', caller);
  expectLength(oldLogProbs, rows * length, 'oldLogProbs', caller);
  expectLength(rewards, rows, 'rewards (one per trajectory)', caller);
  if (typeof baseline !== 'number') expectLength(baseline, rows, 'baseline', caller);
  const z = normalQuantile(confidence);
  const terms = new Float64Array(rows);
  const logWeights = new Float64Array(rows);
  let cappedCount = 0;
  let logWeightMax = -Infinity;
  for (let row = 0; row < rows; row++) {
    let logWeight = 0;
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] === 1) logWeight += logProbs[position] - oldLogProbs[position];
    }
    logWeightMax = Math.max(logWeightMax, logWeight);
    if (logWeight > logWeightCap) {
      cappedCount++;
      logWeight = logWeightCap;
    }
    logWeights[row] = logWeight;
    const rowBaseline = typeof baseline === 'number' ? baseline : baseline[row];
    terms[row] = Math.expm1(logWeight) * (rewards[row] - rowBaseline);
  }
  const { mean, standardError } = meanWithStandardError(terms);
  return {
    estimate: mean,
    standardError,
    lowerBound: mean - z * standardError,
    confidence,
    metrics: {
      cappedCount,
      logWeightMax: rows > 0 ? logWeightMax : Number.NaN,
      effectiveSampleSize: effectiveSampleSize(logWeights),
    },
  };
}

export interface MeasuredImprovementResult {
  /** meanAfter − meanBefore. */
  improvement: number;
  standardError: number;
  meanBefore: number;
  meanAfter: number;
  method: 'paired' | 'welch';
  /** Paired: prompts present in both batches. Welch: trajectories in the smaller batch. */
  count: number;
  /** Welch–Satterthwaite degrees of freedom (Welch), or pairs − 1 (paired). */
  degreesOfFreedom: number;
}

/**
 * The measured improvement between two fresh batches, with its standard error.
 *
 * - paired (the batches share prompts, common random numbers): per prompt g present in both,
 *   d_g = mean(after rewards of g) − mean(before rewards of g); improvement = mean of d_g and
 *   SE = sd(d)/√P over the P shared prompts. Prompts in only one batch are ignored.
 * - unpaired (Welch): improvement = mean(after) − mean(before),
 *   SE = √(s²_before/n_before + s²_after/n_after).
 */
export function measuredImprovement({
  rewardsBefore,
  rewardsAfter,
  paired,
  groupIdsBefore,
  groupIdsAfter,
}: {
  rewardsBefore: NumberArray;
  rewardsAfter: NumberArray;
  paired: boolean;
  /** [rewardsBefore] prompt of each trajectory; required when paired. */
  groupIdsBefore?: NumberArray;
  /** [rewardsAfter] prompt of each trajectory; required when paired. */
  groupIdsAfter?: NumberArray;
}): MeasuredImprovementResult {
  if (!paired) return welchDifference(rewardsBefore, rewardsAfter);
  if (!groupIdsBefore || !groupIdsAfter) {
    throw new TeamtrError(
      'measuredImprovement: paired needs groupIdsBefore and groupIdsAfter (the prompt of each ' +
        'trajectory), or pass paired: false',
    );
  }
  expectLength(groupIdsBefore, rewardsBefore.length, 'groupIdsBefore', 'measuredImprovement');
  expectLength(groupIdsAfter, rewardsAfter.length, 'groupIdsAfter', 'measuredImprovement');
  const before = groupMeans(rewardsBefore, groupIdsBefore);
  const after = groupMeans(rewardsAfter, groupIdsAfter);
  const differences: number[] = [];
  let sumBefore = 0;
  let sumAfter = 0;
  for (const [groupId, meanBefore] of before) {
    const meanAfter = after.get(groupId);
    if (meanAfter === undefined) continue;
    differences.push(meanAfter - meanBefore);
    sumBefore += meanBefore;
    sumAfter += meanAfter;
  }
  const { mean, standardError, count } = meanWithStandardError(differences);
  return {
    improvement: mean,
    standardError,
    meanBefore: sumBefore / count,
    meanAfter: sumAfter / count,
    method: 'paired',
    count,
    degreesOfFreedom: count - 1,
  };
}

function groupMeans(rewards: NumberArray, groupIds: NumberArray): Map<number, number> {
  const sums = new Map<number, { sum: number; count: number }>();
  for (let index = 0; index < rewards.length; index++) {
    if (!Number.isInteger(groupIds[index])) {
      throw new ShapeError(
        `measuredImprovement: group ids must be integers, got ${groupIds[index]}`,
      );
    }
    const entry = sums.get(groupIds[index]) ?? { sum: 0, count: 0 };
    entry.sum += rewards[index];
    entry.count++;
    sums.set(groupIds[index], entry);
  }
  return new Map([...sums].map(([groupId, { sum, count }]) => [groupId, sum / count]));
}

function welchDifference(before: NumberArray, after: NumberArray): MeasuredImprovementResult {
  const first = meanWithStandardError(before);
  const second = meanWithStandardError(after);
  const varianceBefore = first.standardError ** 2; // s²/n
  const varianceAfter = second.standardError ** 2;
  const standardError = Math.sqrt(varianceBefore + varianceAfter);
  const degreesOfFreedom =
    (varianceBefore + varianceAfter) ** 2 /
    (varianceBefore ** 2 / (first.count - 1) + varianceAfter ** 2 / (second.count - 1));
  return {
    improvement: second.mean - first.mean,
    standardError,
    meanBefore: first.mean,
    meanAfter: second.mean,
    method: 'welch',
    count: Math.min(first.count, second.count),
    degreesOfFreedom,
  };
}

/**
 * Occupancy gap of update i: ½·E_stale[|W_{<i} − 1|] with W_{<i} = exp(Σ log(π_new/π_stale)) over
 * the earlier-updated agents' tokens of a trajectory sampled from the stale team. Since
 * ½·E_Q|dP/dQ − 1| = TV(P, Q), this estimates the total variation between the stale and current
 * team's distributions of those tokens, which bounds the TV of the contexts agent i sees (exactly
 * that TV when W covers only tokens emitted before agent i's turns). Mean with standard error.
 */
export function occupancyGap({
  logRatioEarlierAgents,
}: {
  /** [trajectories] Σ log(π_new/π_stale) over the earlier-updated agents' tokens. */
  logRatioEarlierAgents: NumberArray;
}): { gap: number; standardError: number; count: number } {
  const halfDeviations = Float64Array.from(
    { length: logRatioEarlierAgents.length },
    (_, index) => 0.5 * Math.abs(Math.expm1(logRatioEarlierAgents[index])),
  );
  const { mean, standardError, count } = meanWithStandardError(halfDeviations);
  return { gap: mean, standardError, count };
}
