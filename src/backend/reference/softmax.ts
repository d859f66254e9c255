import type { KernelArguments } from '../types.js';

/**
 * Row-wise softmax, log-softmax and the fused log-softmax + gather used for language-model
 * scoring. Every row subtracts its maximum before exponentiating (no overflow for logits of
 * any size) and sums in float64. A NaN anywhere in a row makes the whole row NaN; a row that is
 * entirely −∞ has no defined distribution and also comes out NaN (as in PyTorch).
 */

/** Largest entry of row `row`; −∞ for an empty or all −∞ row. */
function rowMaximum(input: Float32Array, start: number, columns: number): number {
  let maximum = -Infinity;
  for (let j = 0; j < columns; j++) {
    const value = input[start + j];
    if (value > maximum) maximum = value;
  }
  return maximum;
}

/** log Σ_j exp(x_j) of one row, computed as max + log Σ exp(x_j − max). */
export function rowLogSumExp(input: Float32Array, start: number, columns: number): number {
  const maximum = rowMaximum(input, start, columns);
  let sum = 0;
  for (let j = 0; j < columns; j++) sum += Math.exp(input[start + j] - maximum);
  return maximum + Math.log(sum);
}

/**
 * A kernel that maps each row of a row-major `[rows, columns]` input to the same row of
 * `output` (which may alias the input).
 */
type RowwiseKernel = (
  input: Float32Array,
  output: Float32Array,
  rows: number,
  columns: number,
) => void;

export const softmax: RowwiseKernel = (input, output, rows, columns) => {
  for (let r = 0; r < rows; r++) {
    const start = r * columns;
    const maximum = rowMaximum(input, start, columns);
    let sum = 0;
    for (let j = 0; j < columns; j++) {
      const exponential = Math.exp(input[start + j] - maximum);
      output[start + j] = exponential;
      sum += exponential;
    }
    // Normalising from the float32-rounded exponentials keeps the cost to one exp per entry;
    // the relative error this adds is below float32 resolution.
    const inverse = 1 / sum;
    for (let j = 0; j < columns; j++) output[start + j] *= inverse;
  }
};

export const logSoftmax: RowwiseKernel = (input, output, rows, columns) => {
  for (let r = 0; r < rows; r++) {
    const start = r * columns;
    const logSumExp = rowLogSumExp(input, start, columns);
    for (let j = 0; j < columns; j++) output[start + j] = input[start + j] - logSumExp;
  }
};

function checkTarget(target: number, row: number, columns: number): void {
  if (!(target >= 0 && target < columns)) {
    throw new RangeError(
      `gatherLogProbs: target ${target} of row ${row} is outside [0, ${columns})`,
    );
  }
}

function logProbOf(logits: Float32Array, start: number, target: number, rowLse: number): number {
  return logits[start + target]! - rowLse;
}

/** gatherLogProbs' log-probability of `target` in the row at `start` (sampleRows shares it). */
export function rowLogProb(
  logits: Float32Array,
  start: number,
  columns: number,
  target: number,
): number {
  return logProbOf(logits, start, target, rowLogSumExp(logits, start, columns));
}

/**
 * logProbs[r] = logits[r, targets[r]] − logsumexp(logits[r]); optionally the entropy
 * −Σ p log p (terms with p = 0 contribute 0, so −∞ logits are fine) and the logsumexp.
 */
export function gatherLogProbs(args: KernelArguments<'gatherLogProbs'>): void {
  const { logits, targets, rows, columns, logProbs, entropy, logSumExp } = args;
  for (let r = 0; r < rows; r++) {
    const start = r * columns;
    const target = targets[r];
    checkTarget(target, r, columns);
    const rowLse = rowLogSumExp(logits, start, columns);
    logProbs[r] = logProbOf(logits, start, target, rowLse);
    if (logSumExp) logSumExp[r] = rowLse;
    if (entropy) entropy[r] = rowEntropy(logits, start, columns, rowLse);
  }
}

/** −Σ p_j log p_j with p_j = exp(x_j − lse); zero-probability entries are skipped. */
function rowEntropy(logits: Float32Array, start: number, columns: number, lse: number): number {
  let sum = 0;
  for (let j = 0; j < columns; j++) {
    const logProbability = logits[start + j] - lse;
    const probability = Math.exp(logProbability);
    if (probability > 0) sum -= probability * logProbability;
    else if (Number.isNaN(probability)) return NaN;
  }
  return sum;
}

/**
 * gradLogits[r, c] += g_r·(1[c = t_r] − p_c) + gE_r·(−p_c·(log p_c + H_r)), the derivative of
 * the gathered log-probability and of the entropy H_r = −Σ p log p with respect to the logits.
 */
export function gatherLogProbsBackward(args: KernelArguments<'gatherLogProbsBackward'>): void {
  const { logits, targets, rows, columns, logSumExp, gradLogProbs, gradEntropy, gradLogits } = args;
  const overwrite = (args.beta ?? 1) === 0;
  for (let r = 0; r < rows; r++) {
    const gradient = gradLogProbs[r];
    const entropyGradient = gradEntropy ? gradEntropy[r] : 0;
    const start = r * columns;
    if (overwrite) gradLogits.fill(0, start, start + columns);
    if (gradient === 0 && entropyGradient === 0) continue;
    const target = targets[r];
    checkTarget(target, r, columns);
    const lse = logSumExp[r];
    const entropy = entropyGradient === 0 ? 0 : rowEntropy(logits, start, columns, lse);
    for (let j = 0; j < columns; j++) {
      const logProbability = logits[start + j] - lse;
      const probability = Math.exp(logProbability);
      let delta = -gradient * probability;
      if (entropyGradient !== 0 && probability !== 0) {
        delta -= entropyGradient * probability * (logProbability + entropy);
      }
      gradLogits[start + j] += delta;
    }
    gradLogits[start + target] += gradient;
  }
}
