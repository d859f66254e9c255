import { getBackend } from '../backend/index.js';
import type { RandomGenerator } from '../util/random.js';

export interface SamplingSettings {
  /** Divides the logits; 0 means greedy. @default 1 */
  temperature: number;
  /** Keep only the k most likely tokens; 0 = off. @default 0 */
  topK: number;
  /** Keep the smallest set of tokens whose probability reaches p; 1 = off. @default 1 */
  topP: number;
}

/** One sampled token and its log-probability under the model at temperature 1. */
export interface SampledToken {
  token: number;
  logProb: number;
}

/**
 * Draws one token from each row of logits [rows, vocab] under temperature, top-k and top-p, in
 * float64. Returns each token and its log-probability under the model's own distribution
 * (temperature 1, no truncation): the quantity RL scores and importance ratios use. A row whose
 * generator is null draws nothing (null). Generators are consumed in row order, one uniform per
 * drawing row (none when greedy).
 *
 * The row statistics (maximum, Σ exp) and plain sampling run in the `sampleRows` kernel, which
 * computes exactly what a JavaScript loop would, so the tokens for a seed are the same on every
 * backend; only truncated sampling walks the row here. The log-probability is the
 * `gatherLogProbs` kernel's, the one scoring uses (score.ts), so that a token's recorded log-prob
 * has the bits scoring gives it from the same logits: the importance ratio of an unchanged
 * policy is exactly 1. Plain sampling has `sampleRows` compute it with the draw (the same bits,
 * without a second pass over the logits); truncated sampling calls `gatherLogProbs` itself.
 */
export function sampleTokens(
  logits: Float32Array,
  rows: number,
  vocab: number,
  settings: SamplingSettings,
  randoms: readonly (RandomGenerator | null)[],
  /** Draw only among ids below this (padded embedding rows have no token). @default vocab */
  drawableVocab = vocab,
): Array<SampledToken | null> {
  const untruncated =
    settings.temperature === 1 &&
    drawableVocab === vocab &&
    !((settings.topK > 0 && settings.topK < vocab) || settings.topP < 1);
  const uniforms = new Float64Array(rows).fill(-1);
  if (untruncated)
    for (let row = 0; row < rows; row++) {
      const random = randoms[row];
      if (random) uniforms[row] = random.nextDouble();
    }
  const tokens = new Int32Array(rows);
  const logProbs = new Float32Array(rows);
  if (untruncated) {
    const maximum = new Float32Array(rows);
    const total = new Float64Array(rows);
    // Each drawn token's log-prob comes with it (gatherLogProbs' bits, one pass fewer).
    getBackend().sampleRows({
      logits,
      rows,
      columns: vocab,
      uniforms,
      tokens,
      maximum,
      total,
      logProbs,
    });
  }
  for (let row = 0; row < rows; row++) {
    const random = randoms[row];
    if (!random) continue;
    const offset = row * vocab;
    if (settings.temperature === 0) tokens[row] = argmax(logits, offset, drawableVocab);
    else if (!untruncated)
      tokens[row] = drawTruncated(logits, offset, drawableVocab, settings, random);
  }
  if (!untruncated)
    getBackend().gatherLogProbs({
      logits,
      targets: tokens,
      rows,
      columns: vocab,
      logProbs,
      entropy: null,
      logSumExp: null,
    });
  return Array.from({ length: rows }, (_, row) =>
    randoms[row] ? { token: tokens[row]!, logProb: logProbs[row]! } : null,
  );
}

/** `sampleTokens` for one row of logits starting at `offset`. */
export function sampleToken(
  logits: Float32Array,
  offset: number,
  vocab: number,
  settings: SamplingSettings,
  random: RandomGenerator,
  drawableVocab = vocab,
): SampledToken {
  const row = logits.subarray(offset, offset + vocab);
  return sampleTokens(row, 1, vocab, settings, [random], drawableVocab)[0]!;
}

/** A draw proportional to weights[0..count), whose sum is `total`. */
function drawFrom(
  weights: Float64Array,
  count: number,
  total: number,
  random: RandomGenerator,
): number {
  let threshold = random.nextDouble() * total;
  for (let column = 0; column < count; column++) {
    threshold -= weights[column]!;
    if (threshold < 0) return column;
  }
  // Rounding left a sliver: return the last token with weight.
  for (let column = count - 1; column >= 0; column--) if (weights[column]! > 0) return column;
  return 0;
}

function argmax(logits: Float32Array, offset: number, vocab: number): number {
  let best = 0;
  for (let column = 1; column < vocab; column++)
    if (logits[offset + column]! > logits[offset + best]!) best = column;
  return best;
}

function drawTruncated(
  logits: Float32Array,
  offset: number,
  vocab: number,
  settings: SamplingSettings,
  random: RandomGenerator,
): number {
  const weights = new Float64Array(vocab);
  let maximum = -Infinity;
  for (let column = 0; column < vocab; column++)
    maximum = Math.max(maximum, logits[offset + column]!);
  for (let column = 0; column < vocab; column++) {
    weights[column] = Math.exp((logits[offset + column]! - maximum) / settings.temperature);
  }
  const truncate = (settings.topK > 0 && settings.topK < vocab) || settings.topP < 1;
  if (truncate) applyTruncation(weights, settings);
  let total = 0;
  for (let column = 0; column < vocab; column++) total += weights[column]!;
  return drawFrom(weights, vocab, total, random);
}

/** Zeroes the weights outside the top-k and outside the top-p nucleus. */
function applyTruncation(weights: Float64Array, settings: SamplingSettings): void {
  const order = Array.from(weights.keys()).sort((a, b) => weights[b]! - weights[a]! || a - b);
  let total = 0;
  for (const index of order) total += weights[index]!;
  const keep = settings.topK > 0 ? Math.min(settings.topK, order.length) : order.length;
  let cumulative = 0;
  let kept = 0;
  for (const index of order) {
    const inNucleus = cumulative < settings.topP * total;
    if (kept < keep && inNucleus) {
      cumulative += weights[index]!;
      kept++;
    } else {
      weights[index] = 0;
    }
  }
}
