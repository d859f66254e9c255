/**
 * The optional critic of PPO: generalized advantage estimation (Schulman et al. 2016) over an
 * agent's own tokens, and the clipped value loss with its analytic gradient.
 *
 * Agent i's MDP has one step per token it emits. Tokens of other agents (and the prompt) are part
 * of the environment's transition between two of its steps, so GAE runs over the masked positions
 * of a row in order and skips the rest; the step after the agent's last token is terminal
 * (value 0). Put the team reward on the agent's last token with `placeTerminalReward`.
 */
import { TeamtrError } from '../util/errors.js';
import { aggregationWeights, type LossAggregation } from './aggregation.js';
import { expectLength, resolveTokenGrid, type NumberArray } from './layout.js';

export interface GeneralizedAdvantageResult {
  /** [rows, length] Â_t, 0 where mask = 0. */
  advantages: Float32Array;
  /** [rows, length] value targets Â_t + V_t, 0 where mask = 0. */
  returns: Float32Array;
}

/**
 * Per row, over its masked positions t₁ < t₂ < … < t_n (V(t_{n+1}) = 0, Â(t_{n+1}) = 0):
 *
 *   δ_k = r(t_k) + γ·V(t_{k+1}) − V(t_k)
 *   Â_k = δ_k + γ·λ·Â_{k+1}
 *   return_k = Â_k + V(t_k)
 *
 * λ = 1 gives the Monte-Carlo return minus the value; λ = 0 the one-step TD error.
 */
export function generalizedAdvantageEstimation({
  rewards,
  values,
  mask,
  rows,
  gamma,
  lambda,
}: {
  /** [rows, length] per-token reward (read only where mask = 1). */
  rewards: NumberArray;
  /** [rows, length] V(prefix) at each of the agent's tokens. */
  values: NumberArray;
  mask: NumberArray;
  rows: number;
  /** Discount per agent step, in [0, 1]. */
  gamma: number;
  /** GAE λ, in [0, 1]. */
  lambda: number;
}): GeneralizedAdvantageResult {
  const caller = 'generalizedAdvantageEstimation';
  const { length } = resolveTokenGrid(mask, rows, caller);
  expectLength(rewards, rows * length, 'rewards', caller);
  expectLength(values, rows * length, 'values', caller);
  if (!(gamma >= 0 && gamma <= 1) || !(lambda >= 0 && lambda <= 1)) {
    throw new TeamtrError(
      `${caller}: gamma and lambda must lie in [0, 1] (got ${gamma}, ${lambda})`,
    );
  }
  const advantages = new Float32Array(rows * length);
  const returns = new Float32Array(rows * length);
  for (let row = 0; row < rows; row++) {
    let nextValue = 0;
    let nextAdvantage = 0;
    for (let position = (row + 1) * length - 1; position >= row * length; position--) {
      if (mask[position] !== 1) continue;
      const value = values[position];
      const temporalDifference = rewards[position] + gamma * nextValue - value;
      const advantage = temporalDifference + gamma * lambda * nextAdvantage;
      advantages[position] = advantage;
      returns[position] = advantage + value;
      nextValue = value;
      nextAdvantage = advantage;
    }
  }
  return { advantages, returns };
}

export interface ValueLossResult {
  loss: number;
  /** [rows, length] dLoss/dvalues, 0 where mask = 0. */
  gradValues: Float32Array;
  metrics: {
    /** Fraction of masked tokens whose clipped error is strictly larger (gradient 0). */
    clipFraction: number;
    /** 1 − Var(returns − values) / Var(returns) over masked tokens (1 = perfect critic). */
    explainedVariance: number;
    valueMean: number;
    returnMean: number;
    tokenCount: number;
  };
}

export interface ValueLossInputs {
  /** [rows, length] */
  values: NumberArray;
  /** [rows, length]; needed only with clipRange. */
  oldValues?: NumberArray;
  /** [rows, length] */
  returns: NumberArray;
  mask: NumberArray;
  rows: number;
  /** c > 0; omit for no clipping. */
  clipRange?: number;
  aggregation: LossAggregation;
  normalizer?: number;
}

/**
 * PPO's clipped value loss. Per masked token, with V the new value, V_old the value at sampling,
 * R the return and c = clipRange:
 *
 *   V_clip = V_old + clip(V − V_old, −c, c)
 *   loss   = Σ w · ½·max((V − R)², (V_clip − R)²)          (w from aggregation.ts)
 *
 *   dLoss/dV = w·(V − R)   when (V − R)² is the maximum (ties included; always so inside the band)
 *            = 0           when (V_clip − R)² is strictly larger (V_clip is then constant in V)
 *
 * Without `clipRange` it is the plain squared error ½·(V − R)².
 */
export function valueLoss({
  values,
  oldValues,
  returns,
  mask,
  rows,
  clipRange,
  aggregation,
  normalizer,
}: ValueLossInputs): ValueLossResult {
  const caller = 'valueLoss';
  const { length } = resolveTokenGrid(mask, rows, caller);
  const size = rows * length;
  expectLength(values, size, 'values', caller);
  expectLength(returns, size, 'returns', caller);
  if (clipRange !== undefined) {
    if (!(clipRange > 0))
      throw new TeamtrError(`${caller}: clipRange must be > 0, got ${clipRange}`);
    if (!oldValues)
      throw new TeamtrError(`${caller}: clipRange needs oldValues (values at sampling)`);
    expectLength(oldValues, size, 'oldValues', caller);
  }
  const { weights, tokenCount } = aggregationWeights({ mask, rows, aggregation, normalizer });
  const gradValues = new Float32Array(size);
  let loss = 0;
  let clippedCount = 0;
  let valueSum = 0;
  let returnSum = 0;
  for (let position = 0; position < size; position++) {
    if (mask[position] !== 1) continue;
    const value = values[position];
    const target = returns[position];
    const unclippedError = (value - target) ** 2;
    let clipped = false;
    let error = unclippedError;
    if (clipRange !== undefined && oldValues) {
      const old = oldValues[position];
      const clippedValue = old + Math.min(Math.max(value - old, -clipRange), clipRange);
      const clippedError = (clippedValue - target) ** 2;
      clipped = clippedError > unclippedError;
      if (clipped) error = clippedError;
    }
    loss += weights[position] * 0.5 * error;
    gradValues[position] = clipped ? 0 : weights[position] * (value - target);
    if (clipped) clippedCount++;
    valueSum += value;
    returnSum += target;
  }
  return {
    loss,
    gradValues,
    metrics: {
      clipFraction: tokenCount > 0 ? clippedCount / tokenCount : Number.NaN,
      explainedVariance: explainedVariance(values, returns, mask, tokenCount),
      valueMean: tokenCount > 0 ? valueSum / tokenCount : Number.NaN,
      returnMean: tokenCount > 0 ? returnSum / tokenCount : Number.NaN,
      tokenCount,
    },
  };
}

function explainedVariance(
  values: NumberArray,
  returns: NumberArray,
  mask: NumberArray,
  tokenCount: number,
): number {
  if (tokenCount === 0) return Number.NaN;
  let returnSum = 0;
  let residualSum = 0;
  for (let position = 0; position < mask.length; position++) {
    if (mask[position] !== 1) continue;
    returnSum += returns[position];
    residualSum += returns[position] - values[position];
  }
  const returnMean = returnSum / tokenCount;
  const residualMean = residualSum / tokenCount;
  let returnSquares = 0;
  let residualSquares = 0;
  for (let position = 0; position < mask.length; position++) {
    if (mask[position] !== 1) continue;
    returnSquares += (returns[position] - returnMean) ** 2;
    residualSquares += (returns[position] - values[position] - residualMean) ** 2;
  }
  return returnSquares > 0 ? 1 - residualSquares / returnSquares : Number.NaN;
}
