/**
 * Exact per-position total variation over the whole vocabulary: TV(π_old(·|prefix),
 * π_new(·|prefix)) = ½ Σ_v |p_v − q_v| at every position where the agent emitted a token. The
 * second-order certificate (certificate.ts) charges each token its own TV, which is exact here
 * where Pinsker's √(KL/2) only bounds it. Same row layout as kl.ts's tokenKl: log-softmax'ed
 * rows `[positions, vocab]`, any chunk of positions, float64 sums.
 */
import {
  mapVocabularyRows,
  type FullDistributionPair,
  type VocabularyRowValue,
} from './full-distribution.js';

/**
 * TV per position, with log p = oldLogProbsFull and log q = newLogProbsFull. Each term is
 * |p − q| = max(p, q)·(1 − e^(−|log p − log q|)), computed with expm1, so p ≈ q loses no digits
 * to cancellation and a tiny probability next to a large one cannot overflow. The result is
 * clamped to [0, 1] against float32 rounding of the inputs.
 */
export function tokenTotalVariation(pair: FullDistributionPair): Float32Array {
  return mapVocabularyRows(pair, 'tokenTotalVariation', totalVariationOfRow);
}

/** tokenTotalVariation's sum over one row, halved and clamped. */
const totalVariationOfRow: VocabularyRowValue = (oldLogProbsFull, newLogProbsFull, start, end) => {
  let sum = 0;
  for (let index = start; index < end; index++) {
    const oldLogProb = oldLogProbsFull[index];
    const newLogProb = newLogProbsFull[index];
    const larger = Math.max(oldLogProb, newLogProb);
    if (larger === -Infinity) continue;
    sum += -Math.exp(larger) * Math.expm1(-Math.abs(oldLogProb - newLogProb));
  }
  return Math.min(1, Math.max(0, sum / 2));
};
