import type { RandomGenerator } from '../util/random.js';

export interface SamplingSettings {
  /** Divides the logits; 0 means greedy. @default 1 */
  temperature: number;
  /** Keep only the k most likely tokens; 0 = off. @default 0 */
  topK: number;
  /** Keep the smallest set of tokens whose probability reaches p; 1 = off. @default 1 */
  topP: number;
}

/**
 * Draws one token from a row of logits under temperature, top-k and top-p, in float64.
 * Returns the token and its log-probability under the model's own distribution
 * (temperature 1, no truncation): the quantity RL scores and importance ratios use.
 */
export function sampleToken(
  logits: Float32Array,
  offset: number,
  vocab: number,
  settings: SamplingSettings,
  random: RandomGenerator,
  /** Draw only among ids below this (padded embedding rows have no token). @default vocab */
  drawableVocab = vocab,
): { token: number; logProb: number } {
  let maximum = -Infinity;
  for (let column = 0; column < vocab; column++)
    maximum = Math.max(maximum, logits[offset + column]!);
  const exponentials = scratch(vocab);
  let total = 0;
  for (let column = 0; column < vocab; column++) {
    const value = Math.exp(logits[offset + column]! - maximum);
    exponentials[column] = value;
    total += value;
  }
  const logNormalizer = maximum + Math.log(total);
  const untruncated =
    settings.temperature === 1 &&
    drawableVocab === vocab &&
    !((settings.topK > 0 && settings.topK < vocab) || settings.topP < 1);
  let token: number;
  if (settings.temperature === 0) token = argmax(logits, offset, drawableVocab);
  // Plain sampling draws from the exponentials just computed (the same numbers the general
  // path would compute again, so the draw is identical); one exp per token instead of two.
  else if (untruncated) token = drawFrom(exponentials, vocab, total, random);
  else token = drawTruncated(logits, offset, drawableVocab, settings, random);
  return { token, logProb: logits[offset + token]! - logNormalizer };
}

let scratchBuffer = new Float64Array(0);

/** A reused float64 buffer of at least `size` entries (sampling runs once per row and step). */
function scratch(size: number): Float64Array {
  if (scratchBuffer.length < size) scratchBuffer = new Float64Array(size);
  return scratchBuffer;
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
