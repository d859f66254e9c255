/**
 * The clipped surrogate policy loss of PPO (Schulman et al. 2017) with DAPO's asymmetric
 * "clip-higher" (Yu et al. 2025), returning the loss AND its analytic gradient with respect to the
 * new log-probabilities. The trainer injects `gradLogProbs` into the model's autograd graph as the
 * upstream gradient of the scored log-probabilities, so this file needs no autograd.
 */
import { TeamtrError } from '../util/errors.js';
import { aggregationWeights, type LossAggregation } from './aggregation.js';
import { expectLength, resolveTokenGrid, type NumberArray } from './layout.js';

export interface ClippedSurrogateResult {
  /** The aggregated loss to MINIMIZE (the negated clipped objective). */
  loss: number;
  /** [rows, length] dLoss/dlogProbs, 0 where mask = 0. */
  gradLogProbs: Float32Array;
  /** Token means over the masked tokens (NaN when there are none), whatever the aggregation. */
  metrics: {
    /** Fraction of tokens whose clipped term is strictly smaller: their gradient is 0. */
    clipFraction: number;
    /** …of which A < 0 and ratio < 1 − clipLow. */
    clipLowFraction: number;
    /** …of which A > 0 and ratio > 1 + clipHigh. */
    clipHighFraction: number;
    /**
     * k3 estimator of KL(π_old ‖ π_new) from tokens sampled under π_old: mean of
     * (ratio − 1) − log ratio ≥ 0. For display and early stopping only; the trust region uses
     * the exact full-vocabulary KL (kl.ts).
     */
    approxKl: number;
    ratioMean: number;
    ratioMin: number;
    ratioMax: number;
    /** Mean of the unclipped objective ratio·A (per token). */
    unclippedObjectiveMean: number;
    tokenCount: number;
    sequenceCount: number;
  };
}

/**
 * PPO clipped surrogate. Per masked token, with ratio ρ = exp(logProb − oldLogProb):
 *
 *   objective = min(ρ·A, clip(ρ, 1 − clipLow, 1 + clipHigh)·A)
 *   loss      = −Σ_{r,t} w[r,t]·objective[r,t]          (w from aggregation.ts)
 *
 * and, the forward rule's gradient next to it (dρ/dlogProb = ρ):
 *
 *   dObjective/dlogProb = ρ·A   when the unclipped term is the minimum (ties included)
 *                       = 0     when the clipped term is strictly smaller (it is constant in ρ)
 *   dLoss/dlogProb      = −w·dObjective/dlogProb
 *
 * At ρ = 1 everywhere this is the vanilla policy gradient: dLoss/dlogProb = −w·A.
 * clipLow = clipHigh is symmetric PPO; clipHigh > clipLow is DAPO's clip-higher.
 */
export function clippedSurrogate({
  logProbs,
  oldLogProbs,
  advantages,
  mask,
  rows,
  clipLow,
  clipHigh,
  aggregation,
  normalizer,
}: {
  /** [rows, length] log π_new of the tokens taken. */
  logProbs: NumberArray;
  /** [rows, length] log π_old of the same tokens, recorded at sampling. */
  oldLogProbs: NumberArray;
  /** [rows, length] per-token advantage (see broadcastToTokens for per-trajectory ones). */
  advantages: NumberArray;
  /** [rows, length] 1 = this agent's token. */
  mask: NumberArray;
  rows: number;
  /** Ratio floor is 1 − clipLow; 0 ≤ clipLow < 1 (PPO: 0.2). */
  clipLow: number;
  /** Ratio ceiling is 1 + clipHigh; clipHigh ≥ 0 (DAPO: 0.28). */
  clipHigh: number;
  aggregation: LossAggregation;
  /** C for `sequence-sum-normalized`. @default length */
  normalizer?: number;
}): ClippedSurrogateResult {
  const caller = 'clippedSurrogate';
  const { length } = resolveTokenGrid(mask, rows, caller);
  const size = rows * length;
  expectLength(logProbs, size, 'logProbs', caller);
  expectLength(oldLogProbs, size, 'oldLogProbs', caller);
  expectLength(advantages, size, 'advantages', caller);
  if (!(clipLow >= 0 && clipLow < 1) || !(clipHigh >= 0)) {
    throw new TeamtrError(
      `${caller}: need 0 ≤ clipLow < 1 and clipHigh ≥ 0 (got clipLow ${clipLow}, clipHigh ${clipHigh})`,
    );
  }
  const { weights, tokenCount, sequenceCount } = aggregationWeights({
    mask,
    rows,
    aggregation,
    normalizer,
  });
  const gradLogProbs = new Float32Array(size);
  const statistics = new TokenStatistics();
  let loss = 0;
  for (let position = 0; position < size; position++) {
    if (mask[position] !== 1) continue;
    const logRatio = logProbs[position] - oldLogProbs[position];
    const token = clippedObjective(logRatio, advantages[position], clipLow, clipHigh);
    loss -= weights[position] * token.objective;
    gradLogProbs[position] = -weights[position] * token.gradient;
    statistics.add(logRatio, advantages[position], token);
  }
  return {
    loss,
    gradLogProbs,
    metrics: { ...statistics.means(tokenCount), tokenCount, sequenceCount },
  };
}

/**
 * One token's forward rule and, beside it, its gradient with respect to logProb (dρ/dlogProb = ρ):
 *   objective = min(ρ·A, clip(ρ, 1 − clipLow, 1 + clipHigh)·A)
 *   gradient  = ρ·A if the unclipped term is the minimum (ties included), 0 if the clipped one is.
 */
function clippedObjective(logRatio: number, advantage: number, clipLow: number, clipHigh: number) {
  const ratio = Math.exp(logRatio);
  const unclippedTerm = ratio * advantage;
  const clippedTerm = Math.min(Math.max(ratio, 1 - clipLow), 1 + clipHigh) * advantage;
  const clipped = clippedTerm < unclippedTerm;
  return {
    ratio,
    unclippedTerm,
    clipped,
    objective: clipped ? clippedTerm : unclippedTerm,
    gradient: clipped ? 0 : unclippedTerm,
  };
}

/** Running sums for the token-mean metrics. */
class TokenStatistics {
  private clippedCount = 0;
  private clippedLowCount = 0;
  private clippedHighCount = 0;
  private klSum = 0;
  private ratioSum = 0;
  private ratioMin = Infinity;
  private ratioMax = -Infinity;
  private unclippedSum = 0;

  add(
    logRatio: number,
    advantage: number,
    token: { ratio: number; unclippedTerm: number; clipped: boolean },
  ): void {
    if (token.clipped) {
      this.clippedCount++;
      // Only a negative advantage can be clipped from below, only a positive one from above.
      if (advantage < 0) this.clippedLowCount++;
      else this.clippedHighCount++;
    }
    this.klSum += Math.expm1(logRatio) - logRatio; // k3 = (ρ − 1) − log ρ
    this.ratioSum += token.ratio;
    this.ratioMin = Math.min(this.ratioMin, token.ratio);
    this.ratioMax = Math.max(this.ratioMax, token.ratio);
    this.unclippedSum += token.unclippedTerm;
  }

  means(tokenCount: number) {
    const perToken = (sum: number) => (tokenCount > 0 ? sum / tokenCount : Number.NaN);
    return {
      clipFraction: perToken(this.clippedCount),
      clipLowFraction: perToken(this.clippedLowCount),
      clipHighFraction: perToken(this.clippedHighCount),
      approxKl: perToken(this.klSum),
      ratioMean: perToken(this.ratioSum),
      ratioMin: tokenCount > 0 ? this.ratioMin : Number.NaN,
      ratioMax: tokenCount > 0 ? this.ratioMax : Number.NaN,
      unclippedObjectiveMean: perToken(this.unclippedSum),
    };
  }
}
