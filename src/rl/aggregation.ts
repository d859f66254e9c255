/**
 * Loss aggregation: how per-token losses become one scalar. This file is the only place that
 * decides it; the policy loss and the value loss both ask it for per-token weights w so that
 *
 *   loss = Σ_{r,t} w[r,t] · loss[r,t]      and      dLoss/dloss[r,t] = w[r,t].
 *
 * With M = Σ mask (all masked tokens of the batch), n_r = tokens of row r, and S = the number of
 * rows with n_r > 0 (rows where the agent emitted nothing are left out of every mean):
 *
 * - `token-mean` (DAPO's token-level aggregation): w = 1 / M. Every token weighs the same, so a
 *   long answer counts in proportion to its length.
 * - `sequence-mean` (GRPO's original): w = 1 / (S · n_r). Mean over each sequence's tokens, then
 *   mean over sequences; a token of a short answer weighs more.
 * - `sequence-sum-normalized` (Dr. GRPO's length-unbiased form): w = 1 / (S · C) with C a
 *   constant (`normalizer`, default the padded length): sum over each sequence's tokens divided
 *   by C, then mean over sequences.
 *
 * When every row has the same n_r = C, the three coincide. Weights are 0 where mask = 0, and all
 * weights are 0 when the batch has no masked token (the loss is then 0, not NaN).
 */
import { TeamtrError } from '../util/errors.js';
import { resolveTokenGrid, type NumberArray } from './layout.js';

export const lossAggregations = ['token-mean', 'sequence-mean', 'sequence-sum-normalized'] as const;
export type LossAggregation = (typeof lossAggregations)[number];

export interface AggregationWeights {
  /** [rows, length] */
  weights: Float64Array;
  /** M: masked tokens in the batch. */
  tokenCount: number;
  /** S: rows with at least one masked token. */
  sequenceCount: number;
}

export function aggregationWeights({
  mask,
  rows,
  aggregation,
  normalizer,
}: {
  /** [rows, length] */
  mask: NumberArray;
  rows: number;
  aggregation: LossAggregation;
  /** C for `sequence-sum-normalized`. @default length */
  normalizer?: number;
}): AggregationWeights {
  const { length } = resolveTokenGrid(mask, rows, 'aggregationWeights');
  if (!lossAggregations.includes(aggregation)) {
    throw new TeamtrError(
      `unknown loss aggregation "${aggregation}" (valid: ${lossAggregations.join(', ')})`,
    );
  }
  const constant = normalizer ?? length;
  if (aggregation === 'sequence-sum-normalized' && !(constant > 0)) {
    throw new TeamtrError(`sequence-sum-normalized needs a positive normalizer, got ${constant}`);
  }
  const counts = new Int32Array(rows);
  let tokenCount = 0;
  let sequenceCount = 0;
  for (let row = 0; row < rows; row++) {
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] === 1) counts[row]++;
    }
    tokenCount += counts[row];
    if (counts[row] > 0) sequenceCount++;
  }
  const weights = new Float64Array(rows * length);
  if (tokenCount === 0) return { weights, tokenCount, sequenceCount };
  for (let row = 0; row < rows; row++) {
    if (counts[row] === 0) continue;
    let weight: number;
    if (aggregation === 'token-mean') weight = 1 / tokenCount;
    else if (aggregation === 'sequence-mean') weight = 1 / (sequenceCount * counts[row]);
    else weight = 1 / (sequenceCount * constant);
    for (let position = row * length; position < (row + 1) * length; position++) {
      if (mask[position] === 1) weights[position] = weight;
    }
  }
  return { weights, tokenCount, sequenceCount };
}
