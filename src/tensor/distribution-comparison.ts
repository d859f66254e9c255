/**
 * Two policies' full next-token distributions compared position by position on the kernel
 * backend: the exact KL and TV of the trust region and the ranks of the probability-shift
 * diagnostic, from one pass over both [positions, vocab] log-probability arrays. The trainer
 * may not call the backend itself; this is its door. The formulas are src/rl's (kl.ts,
 * total-variation.ts), restated by the kernel (see compareLogDistributions in
 * src/backend/types.ts).
 */
import { getBackend } from '../backend/index.js';
import { ShapeError } from '../util/errors.js';

/** What compareLogDistributions gives per position. */
export interface LogDistributionComparison {
  /** [positions] KL(π_old ‖ π_new), float64 sums rounded to float32. */
  kl: Float32Array;
  /** [positions] TV(π_old, π_new) = ½ Σ |π_old − π_new|. */
  totalVariation: Float32Array;
  /**
   * [positions, topCount] the ids of each position's most likely tokens under π_old, best
   * first, ties to the lower id (−1 where a row has fewer ranked entries).
   */
  topTokens: Int32Array;
  /** [positions] Σ_v π_old(v), in float64. */
  oldTotals: Float64Array;
  /** [positions] Σ_v π_new(v), in float64. */
  newTotals: Float64Array;
}

/** Compares log π_old and log π_new, [positions, vocab] each (see LogDistributionComparison). */
export function compareLogDistributions({
  oldLogProbs,
  newLogProbs,
  positions,
  vocab,
  topCount = 0,
}: {
  /** [positions, vocab] log π_old, log-softmax'ed rows. */
  oldLogProbs: Float32Array;
  /** [positions, vocab] log π_new. */
  newLogProbs: Float32Array;
  positions: number;
  vocab: number;
  /** Top tokens of π_old kept per position. @default 0 */
  topCount?: number;
}): LogDistributionComparison {
  for (const [name, value] of Object.entries({ positions, vocab, topCount })) {
    if (!Number.isInteger(value) || value < 0)
      throw new ShapeError(
        `compareLogDistributions: ${name} must be a non-negative integer, got ${value}`,
      );
  }
  if (vocab >= 2 ** 31)
    throw new ShapeError(`compareLogDistributions: vocab ${vocab} does not fit int32 token ids`);
  const expected = positions * vocab;
  if (oldLogProbs.length !== expected || newLogProbs.length !== expected) {
    throw new ShapeError(
      `compareLogDistributions: expected [positions, vocab] = ${positions} × ${vocab} values, ` +
        `got ${oldLogProbs.length} (old) and ${newLogProbs.length} (new)`,
    );
  }
  const result: LogDistributionComparison = {
    kl: new Float32Array(positions),
    totalVariation: new Float32Array(positions),
    topTokens: new Int32Array(positions * topCount),
    oldTotals: new Float64Array(positions),
    newTotals: new Float64Array(positions),
  };
  getBackend().compareLogDistributions({
    oldLogProbs,
    newLogProbs,
    rows: positions,
    columns: vocab,
    kl: result.kl,
    totalVariation: result.totalVariation,
    topCount,
    topTokens: result.topTokens,
    oldTotal: result.oldTotals,
    newTotal: result.newTotals,
  });
  return result;
}
