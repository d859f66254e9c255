import { completionDistributionsAndLogProbs } from '../../nn/score.js';
import type { TransformerLM } from '../../nn/transformer.js';
import type { TopkPromptLogProbs } from '../../tinker/types.js';

/**
 * What `asample` reports about the prompt itself (`compute_logprobs`, `include_prompt_logprobs`,
 * `topk_prompt_logprobs`): log π(prompt[i] | prompt[:i]) at every position but the first (null
 * there: nothing predicts it), and the k most likely tokens at each position with their
 * log-probs. One forward pass scores them all, exactly as `forward` scores the same tokens.
 */
export function promptScores(
  model: TransformerLM,
  prompt: readonly number[],
  topK: number,
): { logProbs: Array<number | null>; topK: TopkPromptLogProbs | null } {
  if (prompt.length < 2)
    return {
      logProbs: prompt.map(() => null),
      topK: topK > 0 ? emptyTopK(prompt.length, topK) : null,
    };
  const item = { context: prompt.slice(0, 1), completion: prompt.slice(1) };
  const { distributions, logProbs } = completionDistributionsAndLogProbs(model, [item]);
  const scored: Array<number | null> = [null, ...Array.from(logProbs)];
  if (topK <= 0) return { logProbs: scored, topK: null };
  const vocab = distributions.length / (prompt.length - 1);
  const table = emptyTopK(prompt.length, topK);
  for (let position = 1; position < prompt.length; position++) {
    const row = distributions.subarray((position - 1) * vocab, position * vocab);
    const best = largest(row, Math.min(topK, vocab));
    best.forEach((token, rank) => {
      table.tokenIds[position]![rank] = token;
      table.logProbs[position]![rank] = row[token]!;
    });
  }
  return { logProbs: scored, topK: table };
}

/** The SDK's marks for "not computed" (its MASK_LOGPROB): token 0, log-prob −99999. */
export const maskedLogProb = -99_999;

function emptyTopK(length: number, k: number): TopkPromptLogProbs {
  return {
    k,
    tokenIds: Array.from({ length }, () => new Array<number>(k).fill(0)),
    logProbs: Array.from({ length }, () => new Array<number>(k).fill(maskedLogProb)),
  };
}

/** Indices of the k largest values, largest first (ties: the lower index first). */
function largest(values: Float32Array, k: number): number[] {
  const best: number[] = [];
  for (let index = 0; index < values.length; index++) {
    const value = values[index]!;
    if (best.length === k && value <= values[best[k - 1]!]!) continue;
    let at = best.length;
    while (at > 0 && values[best[at - 1]!]! < value) at--;
    best.splice(at, 0, index);
    if (best.length > k) best.pop();
  }
  return best;
}

/**
 * Where a sample ends under stop strings: after the first token whose text completes one of
 * them (that token kept, as a stop token is), or null when none appears. `decode` is the
 * model's tokenizer; the text is decoded from the start each time, so a stop string split
 * across tokens, or a character split across byte tokens, is found where it completes.
 */
export function stopStringEnd(
  tokens: readonly number[],
  stops: readonly string[],
  decode: (tokens: number[]) => string,
): number | null {
  if (stops.length === 0) return null;
  for (let end = 1; end <= tokens.length; end++) {
    const text = decode(tokens.slice(0, end));
    if (stops.some((stop) => text.includes(stop))) return end;
  }
  return null;
}
