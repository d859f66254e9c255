import {
  certificate,
  grpoAdvantages,
  offPolicyImprovementEstimate,
  staleShiftPenalty,
  surrogateGain,
  trajectoryShift,
  trustRegionPenalty,
  broadcastToTokens,
  weightedTotalVariationPenalty,
} from '../../rl/index.js';
import { turnTokenLimit, type Team } from '../../team/team.js';
import type { TeamBatch } from '../../team/types.js';
import { rowValues } from '../update/token-grid.js';
import type { TrustRegionResult } from '../update/trust-region.js';
import type { CertificateEvidence } from '../update/engine.js';

export interface RankShiftSummary {
  lowestRank: number;
  highestRank: number;
  meanShift: number;
  massShiftPerPosition: number;
}

/** Every certificate quantity of one update (docs/method.md §5), as certifyEvidence computes it. */
export interface UpdateCertificate {
  /** Surrogate gain L (unclipped importance-weighted advantage, reward units). */
  surrogate: number;
  surrogateStandardError: number;
  /**
   * 2ε·E[Σ_k Σ_{j<k} √(KL_j/2)] over every step k up to the agent's horizon (its turns × the
   * longest turn): the first-order penalty, a bound.
   */
  penalty: number;
  /** Extra term of the sequential-stale schedule (earlier agents' trajectory shift). */
  stalePenalty: number;
  /** Certified lower bound L − penalty − stalePenalty (first order). */
  certificate: number;
  /**
   * ε·E[Σ_k |W_k − 1|·TV_k] (docs/method.md §5): the second-order penalty, also a bound. Absent
   * in runs recorded before it existed.
   */
  secondOrderPenalty?: number;
  /** L − secondOrderPenalty − stalePenalty: the second-order certified lower bound. */
  secondOrderCertificate?: number;
  /**
   * The same bounds on the held-out batch (sampled before the update on prompts it never saw):
   * unbiased estimates of them, where those above read high (the update maximized the surrogate
   * on its own batch). Null, or absent in older runs, when held-out measurement is off.
   */
  heldOutSurrogate?: number | null;
  heldOutSurrogateStandardError?: number | null;
  heldOutCertificate?: number | null;
  heldOutSecondOrderCertificate?: number | null;
  /** Σ over the agent's tokens of E√(KL/2): its own trajectory-level shift. */
  trajectoryShift: number;
  offPolicyEstimate: number;
  offPolicyStandardError: number;
  offPolicyLowerBound: number;
  probabilityShiftByRank: RankShiftSummary[];
}

/** The certificate's settings and what the stage knows beyond the batch. */
export interface CertificateSettings {
  /** The reward range R_max − R_min. */
  epsilon: number;
  /** Trajectory shifts of agents updated earlier in the stage (sequential-stale only). */
  earlierShifts: readonly number[];
  /**
   * The most tokens the agent can emit in one trajectory (its turns × the longest turn): the
   * first-order penalty is a bound only with it when output lengths vary (rl/certificate.ts).
   */
  horizon: number;
}

/** Both certified lower bounds on one update's improvement, from one batch sampled by π_old. */
export interface CertificateBounds {
  /** Surrogate gain L (unclipped importance-weighted advantage, reward units). */
  surrogate: number;
  surrogateStandardError: number;
  /** First order: 2ε·E[Σ_k Σ_{j<k} √(KL_j/2)] up to the horizon. */
  penalty: number;
  stalePenalty: number;
  /** L − penalty − stalePenalty. */
  certificate: number;
  /** Second order: ε·E[Σ_k |W_k − 1|·TV_k]. */
  secondOrderPenalty: number;
  /** L − secondOrderPenalty − stalePenalty. */
  secondOrderCertificate: number;
}

/**
 * The certificate's bounds (docs/method.md §5) on `batch`, which π_old sampled. Advantages here
 * are in reward units (R minus the leave-one-out group mean), not the normalized ones of the
 * loss: the certificate bounds the change of J itself. Each bound is an unbiased estimate when
 * `batch` is independent of the update; on the batch the update was fitted to, the surrogate
 * reads high (see HeldOutEvidence).
 */
export function certificateBounds(
  batch: TeamBatch,
  evidence: CertificateEvidence,
  settings: CertificateSettings,
): CertificateBounds {
  const { tokens } = evidence;
  const { epsilon } = settings;
  const grid = { mask: tokens.mask, rows: tokens.rows };
  const gain = surrogateGain({
    logProbs: evidence.newLogProbs,
    oldLogProbs: tokens.oldLogProbs,
    advantages: broadcastToTokens({
      perTrajectory: rowValues(tokens, centeredRewards(batch)),
      ...grid,
    }),
    ...grid,
  });
  const penalty = trustRegionPenalty({
    perTokenKl: evidence.perTokenKl,
    ...grid,
    epsilon,
    horizon: settings.horizon,
  }).penalty;
  const stalePenalty = staleShiftPenalty({
    earlierAgentsTrajectoryShift: settings.earlierShifts,
    epsilon,
  });
  // Second order (rl/certificate.ts): each token pays |W − 1|·TV instead of the first-order
  // Σ_{j<k} TV_j, so a small step pays quadratically. Also a bound.
  const secondOrderPenalty = weightedTotalVariationPenalty({
    logProbs: evidence.newLogProbs,
    oldLogProbs: tokens.oldLogProbs,
    perTokenTotalVariation: evidence.perTokenTotalVariation,
    ...grid,
    epsilon,
  }).penalty;
  const surrogate = gain.mean;
  return {
    surrogate,
    surrogateStandardError: gain.standardError,
    penalty,
    stalePenalty,
    certificate: certificate({ surrogate, penalty, stalePenalty }).lowerBound,
    secondOrderPenalty,
    secondOrderCertificate: certificate({ surrogate, penalty: secondOrderPenalty, stalePenalty })
      .lowerBound,
  };
}

/**
 * Every certificate quantity of one update: the bounds on the batch it was fitted to, the
 * off-policy estimate, the trajectory shift and the rank-shift diagnostics; and the bounds on
 * held-out evidence when the stage measures out of sample.
 */
export function certifyUpdate(options: {
  batch: TeamBatch;
  result: TrustRegionResult;
  settings: CertificateSettings;
  confidence: number;
  heldOut: { batch: TeamBatch; evidence: CertificateEvidence } | null;
}): UpdateCertificate {
  return certifyEvidence({
    ...options,
    evidence: options.result,
    probabilityShiftByRank: rankShift(options.result),
  });
}

/**
 * The certificate of any update's evidence, whatever computed it (the local trust region, or a
 * Tinker service's sampled-token estimates, which have no rank shift to give).
 */
export function certifyEvidence(options: {
  batch: TeamBatch;
  evidence: CertificateEvidence;
  settings: CertificateSettings;
  confidence: number;
  heldOut: { batch: TeamBatch; evidence: CertificateEvidence } | null;
  probabilityShiftByRank: UpdateCertificate['probabilityShiftByRank'];
}): UpdateCertificate {
  const { batch, evidence } = options;
  const { tokens } = evidence;
  const grid = { mask: tokens.mask, rows: tokens.rows };
  const rewards = batch.trajectories.map((trajectory) => trajectory.reward);
  const centered = centeredRewards(batch);
  const offPolicy = offPolicyImprovementEstimate({
    logProbs: evidence.newLogProbs,
    oldLogProbs: tokens.oldLogProbs,
    ...grid,
    rewards: rowValues(tokens, rewards),
    baseline: rowValues(
      tokens,
      rewards.map((reward, index) => reward - centered[index]!),
    ),
    confidence: options.confidence,
  });
  return {
    ...certificateBounds(batch, evidence, options.settings),
    trajectoryShift: trajectoryShift({ perTokenKl: evidence.perTokenKl, ...grid }).mean,
    offPolicyEstimate: offPolicy.estimate,
    offPolicyStandardError: offPolicy.standardError,
    offPolicyLowerBound: offPolicy.lowerBound,
    probabilityShiftByRank: options.probabilityShiftByRank,
    ...heldOutBounds(options.heldOut, options.settings),
  };
}

/**
 * The bounds read on the held-out batch (null fields when there is none). It was sampled by the
 * team as it is now, so no earlier update is stale in it.
 */
export function heldOutBounds(
  heldOut: { batch: TeamBatch; evidence: CertificateEvidence } | null | undefined,
  settings: CertificateSettings,
): Pick<
  UpdateCertificate,
  | 'heldOutSurrogate'
  | 'heldOutSurrogateStandardError'
  | 'heldOutCertificate'
  | 'heldOutSecondOrderCertificate'
> {
  const bounds = heldOut
    ? certificateBounds(heldOut.batch, heldOut.evidence, { ...settings, earlierShifts: [] })
    : null;
  return {
    heldOutSurrogate: bounds ? bounds.surrogate : null,
    heldOutSurrogateStandardError: bounds ? bounds.surrogateStandardError : null,
    heldOutCertificate: bounds ? bounds.certificate : null,
    heldOutSecondOrderCertificate: bounds ? bounds.secondOrderCertificate : null,
  };
}

/** R minus the leave-one-out mean of the other trajectories of its prompt. */
function centeredRewards(batch: TeamBatch): Float64Array {
  return grpoAdvantages({
    rewards: batch.trajectories.map((trajectory) => trajectory.reward),
    groupIds: batch.trajectories.map((trajectory) => trajectory.problemIndex),
    normalizeStd: false,
    leaveOneOut: true,
  }).advantages;
}

/**
 * The most tokens the given agents can emit in one trajectory: their turns × their longest turn.
 * With speakers permuted per episode an agent may take any agent's slots, so each counts the
 * most turns any agent has.
 */
export function tokenHorizon(team: Team, agentIndices: readonly number[]): number {
  const { protocol } = team;
  const turnsOf = (agent: number) => protocol.turnOrder.filter((index) => index === agent).length;
  const mostTurns = Math.max(0, ...protocol.turnOrder.map(turnsOf));
  return agentIndices.reduce(
    (total, agent) =>
      total +
      (protocol.permutePerEpisode ? mostTurns : turnsOf(agent)) * turnTokenLimit(team, agent),
    0,
  );
}

function rankShift(result: TrustRegionResult): RankShiftSummary[] {
  return result.probabilityShiftByRank.map((bucket) => ({
    lowestRank: bucket.lowestRank,
    highestRank: bucket.highestRank,
    meanShift: bucket.meanShift,
    massShiftPerPosition: bucket.massShiftPerPosition,
  }));
}
