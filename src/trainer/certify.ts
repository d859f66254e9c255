import {
  certificate,
  grpoAdvantages,
  offPolicyImprovementEstimate,
  probabilityShiftByRank,
  staleShiftPenalty,
  surrogateGain,
  trajectoryShift,
  trustRegionPenalty,
  broadcastToTokens,
} from '../rl/index.js';
import type { TeamBatch } from '../team/types.js';
import type { RankShiftSummary, UpdateCertificate } from './records.js';

export type { UpdateCertificate } from './records.js';
import { rowValues } from './token-grid.js';
import type { TrustRegionResult } from './trust-region.js';

const rankBuckets = [1, 2, 3, 5, 10, Infinity];

/**
 * Every certificate quantity of one update (docs/method.md §5), from the fresh batch it was
 * computed on and the accepted parameters. Advantages here are in reward units (R minus the
 * leave-one-out group mean), not the normalized ones of the loss: the certificate bounds the
 * change of J itself.
 */
export function certifyUpdate(options: {
  batch: TeamBatch;
  result: TrustRegionResult;
  epsilon: number;
  confidence: number;
  /** Trajectory shifts of agents updated earlier in the stage (sequential-stale only). */
  earlierShifts: readonly number[];
  vocab: number;
}): UpdateCertificate {
  const { batch, result, epsilon } = options;
  const { tokens } = result;
  const rewards = batch.trajectories.map((trajectory) => trajectory.reward);
  const groupIds = batch.trajectories.map((trajectory) => trajectory.problemIndex);
  const centered = grpoAdvantages({
    rewards,
    groupIds,
    normalizeStd: false,
    leaveOneOut: true,
  }).advantages;
  const rowAdvantages = rowValues(tokens, centered);
  const grid = { mask: tokens.mask, rows: tokens.rows };
  const gain = surrogateGain({
    logProbs: result.newLogProbs,
    oldLogProbs: tokens.oldLogProbs,
    advantages: broadcastToTokens({ perTrajectory: rowAdvantages, ...grid }),
    ...grid,
  });
  const penalty = trustRegionPenalty({ perTokenKl: result.perTokenKl, ...grid, epsilon });
  const stalePenalty = staleShiftPenalty({
    earlierAgentsTrajectoryShift: options.earlierShifts,
    epsilon,
  });
  const bound = certificate({ surrogate: gain.mean, penalty: penalty.penalty, stalePenalty });
  const rowRewards = rowValues(tokens, rewards);
  const baselines = rowValues(
    tokens,
    rewards.map((reward, index) => reward - centered[index]!),
  );
  const offPolicy = offPolicyImprovementEstimate({
    logProbs: result.newLogProbs,
    oldLogProbs: tokens.oldLogProbs,
    ...grid,
    rewards: rowRewards,
    baseline: baselines,
    confidence: options.confidence,
  });
  const shift = trajectoryShift({ perTokenKl: result.perTokenKl, ...grid });
  return {
    surrogate: gain.mean,
    surrogateStandardError: gain.standardError,
    penalty: penalty.penalty,
    stalePenalty,
    certificate: bound.lowerBound,
    trajectoryShift: shift.mean,
    offPolicyEstimate: offPolicy.estimate,
    offPolicyStandardError: offPolicy.standardError,
    offPolicyLowerBound: offPolicy.lowerBound,
    probabilityShiftByRank: rankShift(result, options.vocab),
  };
}

function rankShift(result: TrustRegionResult, vocab: number): RankShiftSummary[] {
  const positions = result.tokens.totalTokens;
  if (positions === 0) return [];
  // A plain loop: Float32Array.from with a mapping callback costs several times more per entry,
  // and these are full distributions (positions × vocabulary) for every update.
  const toProbabilities = (logs: Float32Array): Float32Array => {
    const probabilities = new Float32Array(logs.length);
    for (let index = 0; index < logs.length; index++) probabilities[index] = Math.exp(logs[index]!);
    return probabilities;
  };
  return probabilityShiftByRank({
    oldProbsFull: toProbabilities(result.referenceDistributions),
    newProbsFull: toProbabilities(result.finalDistributions),
    positions,
    vocab,
    rankBuckets,
  }).map((bucket) => ({
    lowestRank: bucket.lowestRank,
    highestRank: bucket.highestRank,
    meanShift: bucket.meanShift,
    massShiftPerPosition: bucket.massShiftPerPosition,
  }));
}
