/**
 * Exact per-position divergences over the whole vocabulary, the trust region's measure (docs/method.md
 * §3): KL(π_old(·|prefix) ‖ π_new(·|prefix)) at every position where the agent emitted a token,
 * not a sampled estimator. Inputs are log-softmax'ed rows `[positions, vocab]`; any chunk of
 * positions works, so a trainer can stream them instead of holding a whole batch's vocabulary
 * rows. Sums accumulate in float64.
 */
import {
  checkFullDistributionPair,
  mapVocabularyRows,
  type FullDistributionPair,
  type VocabularyRowValue,
} from './full-distribution.js';
import { checkVocabularyRows, resolveTokenGrid, expectLength, type NumberArray } from './layout.js';

/**
 * KL(p ‖ q) per position, with log p = oldLogProbsFull and log q = newLogProbsFull, computed as
 *
 *   KL = Σ_v [ p_v·(d_v − 1) + q_v ] = Σ_v p_v·(d_v + expm1(−d_v)),   d_v = log p_v − log q_v.
 *
 * For normalized p and q the added Σ(q_v − p_v) is 0, so this IS KL(p‖q); but every term is ≥ 0
 * on its own (x − 1 + e^(−x) ≥ 0), so float32 rounding of the inputs can never make the result
 * negative, and for p ≈ q each term is ≈ p·d²/2 without cancellation. p_v = 0 contributes q_v
 * (which sums to 0 with the rest for normalized inputs); q_v = 0 < p_v gives +∞.
 */
export function tokenKl(pair: FullDistributionPair): Float32Array {
  return mapVocabularyRows(pair, 'tokenKl', klOfRow);
}

/** tokenKl's sum over one row. */
const klOfRow: VocabularyRowValue = (oldLogProbsFull, newLogProbsFull, start, end) => {
  let sum = 0;
  for (let index = start; index < end; index++) {
    const oldLogProb = oldLogProbsFull[index];
    const newLogProb = newLogProbsFull[index];
    if (oldLogProb === -Infinity) {
      sum += Math.exp(newLogProb);
      continue;
    }
    const difference = oldLogProb - newLogProb;
    // Below d = −1, e^(−d) may overflow while p underflows (0·∞). The split form is safe there
    // and does not cancel: q − (1 − d)·p = p·(e^(−d) − 1 + d) > (e − 2)·p.
    sum +=
      difference >= -1
        ? Math.exp(oldLogProb) * (difference + Math.expm1(-difference))
        : Math.exp(oldLogProb) * (difference - 1) + Math.exp(newLogProb);
  }
  return sum;
};

/**
 * Gradient of Σ_p gradKl[p]·KL_p(π_old ‖ π_new) with respect to the NEW logits z (π_new =
 * softmax(z)): for normalized distributions dKL/dz_v = π_new(v) − π_old(v), so
 *
 *   out[p, v] = gradKl[p] · (exp(newLogProbsFull[p, v]) − exp(oldLogProbsFull[p, v])).
 *
 * `gradKl` defaults to 1 at every position.
 */
export function tokenKlGradient(
  input: FullDistributionPair & {
    /** [positions] upstream gradient dLoss/dKL_p. */
    gradKl?: NumberArray;
  },
): Float32Array {
  checkFullDistributionPair(input, 'tokenKlGradient');
  const { oldLogProbsFull, newLogProbsFull, positions, vocab, gradKl } = input;
  if (gradKl) expectLength(gradKl, positions, 'gradKl', 'tokenKlGradient');
  const gradLogits = new Float32Array(positions * vocab);
  for (let position = 0; position < positions; position++) {
    const scale = gradKl ? gradKl[position] : 1;
    for (let index = position * vocab; index < (position + 1) * vocab; index++) {
      gradLogits[index] =
        scale * (Math.exp(newLogProbsFull[index]) - Math.exp(oldLogProbsFull[index]));
    }
  }
  return gradLogits;
}

/**
 * One agent's batch with each of its tokens' exact KL: the input of the KL summaries here and in
 * certificate.ts.
 */
export interface PerTokenKlGrid {
  /** [rows, length] exact per-token KL(π_old ‖ π_new) (tokenKl). */
  perTokenKl: NumberArray;
  /** [rows, length] */
  mask: NumberArray;
  rows: number;
}

/**
 * The agent's token-level KL (docs/method.md §3): the mean of per-token KL over its masked tokens in
 * the batch, the quantity held below δ. Also the maximum, for diagnostics.
 */
export function meanTokenKl({ perTokenKl, mask, rows }: PerTokenKlGrid): {
  mean: number;
  max: number;
  tokenCount: number;
} {
  const { length } = resolveTokenGrid(mask, rows, 'meanTokenKl');
  expectLength(perTokenKl, rows * length, 'perTokenKl', 'meanTokenKl');
  let sum = 0;
  let max = -Infinity;
  let tokenCount = 0;
  for (let position = 0; position < rows * length; position++) {
    if (mask[position] !== 1) continue;
    sum += perTokenKl[position];
    max = Math.max(max, perTokenKl[position]);
    tokenCount++;
  }
  return tokenCount > 0
    ? { mean: sum / tokenCount, max, tokenCount }
    : { mean: Number.NaN, max: Number.NaN, tokenCount };
}

/** Shannon entropy −Σ_v p_v·log p_v (nats) of each row of log-probabilities `[positions, vocab]`. */
export function entropyFromLogProbs({
  logProbsFull,
  positions,
  vocab,
}: {
  logProbsFull: NumberArray;
  positions: number;
  vocab: number;
}): Float32Array {
  checkVocabularyRows(
    [{ name: 'logProbsFull', values: logProbsFull }],
    positions,
    vocab,
    'entropyFromLogProbs',
  );
  const entropy = new Float32Array(positions);
  for (let position = 0; position < positions; position++) {
    let sum = 0;
    for (let index = position * vocab; index < (position + 1) * vocab; index++) {
      const logProb = logProbsFull[index];
      if (logProb !== -Infinity) sum -= Math.exp(logProb) * logProb;
    }
    entropy[position] = sum;
  }
  return entropy;
}
