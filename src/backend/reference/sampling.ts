import type { KernelArguments } from '../types.js';
import { rowLogProb } from './softmax.js';

/**
 * Untruncated sampling at temperature 1, in float64, written as plain JavaScript: Math.max,
 * Math.exp, sums left to right and one uniform per row. This is the definition the native
 * kernel reproduces bit for bit (native/src/sampling.c), so a seed samples the same tokens,
 * with the same log-probabilities, on every backend.
 */
export function sampleRows({
  logits,
  rows,
  columns,
  uniforms,
  tokens,
  maximum,
  total,
  logProbs,
}: KernelArguments<'sampleRows'>): void {
  for (let row = 0; row < rows; row++) {
    const offset = row * columns;
    let rowMaximum = -Infinity;
    for (let column = 0; column < columns; column++)
      rowMaximum = Math.max(rowMaximum, logits[offset + column]!);
    let sum = 0;
    for (let column = 0; column < columns; column++)
      sum += Math.exp(logits[offset + column]! - rowMaximum);
    maximum[row] = rowMaximum;
    total[row] = sum;
    const uniform = uniforms[row]!;
    if (!(uniform >= 0)) continue;
    const token = drawRow(logits, offset, columns, rowMaximum, uniform * sum);
    tokens[row] = token;
    if (logProbs) logProbs[row] = rowLogProb(logits, offset, columns, token);
  }
}

/** The first column at which `threshold` minus the running sum of weights drops below 0. */
function drawRow(
  logits: Float32Array,
  offset: number,
  columns: number,
  maximum: number,
  threshold: number,
): number {
  let remaining = threshold;
  for (let column = 0; column < columns; column++) {
    remaining -= Math.exp(logits[offset + column]! - maximum);
    if (remaining < 0) return column;
  }
  // Rounding left a sliver: the last column with weight.
  for (let column = columns - 1; column >= 0; column--)
    if (Math.exp(logits[offset + column]! - maximum) > 0) return column;
  return 0;
}
