import type { KernelArguments } from '../types.js';

/**
 * RMSNorm and LayerNorm, forward and backward, one row at a time with float64 row statistics.
 * The forward passes save the per-row statistics (1/rms, mean and 1/std) the backward passes
 * need, so backward never recomputes a reduction over the input.
 */

export function rmsNorm(args: KernelArguments<'rmsNorm'>): void {
  const { input, weight, output, inverseRms, rows, columns, epsilon } = args;
  for (let r = 0; r < rows; r++) {
    const start = r * columns;
    let sumOfSquares = 0;
    for (let j = 0; j < columns; j++) sumOfSquares += input[start + j] * input[start + j];
    const inverse = 1 / Math.sqrt(sumOfSquares / columns + epsilon);
    inverseRms[r] = inverse;
    for (let j = 0; j < columns; j++) output[start + j] = input[start + j] * inverse * weight[j];
  }
}

/**
 * With y = x·s·w and s = (mean(x²) + ε)^(−1/2):
 * dx_j = s·w_j·g_j − x_j·s³·(Σ_i x_i·w_i·g_i)/n and dw_j = Σ_rows g_j·x_j·s.
 */
export function rmsNormBackward(args: KernelArguments<'rmsNormBackward'>): void {
  const { input, weight, inverseRms, gradOutput, gradInput, gradWeight, rows, columns } = args;
  for (let r = 0; r < rows; r++) {
    const start = r * columns;
    const inverse = inverseRms[r];
    let projection = 0;
    for (let j = 0; j < columns; j++) {
      projection += input[start + j] * weight[j] * gradOutput[start + j];
    }
    const correction = (inverse * inverse * inverse * projection) / columns;
    for (let j = 0; j < columns; j++) {
      const x = input[start + j];
      const g = gradOutput[start + j];
      gradInput[start + j] += inverse * weight[j] * g - x * correction;
      if (gradWeight) gradWeight[j] += g * x * inverse;
    }
  }
}

export function layerNorm(args: KernelArguments<'layerNorm'>): void {
  const { input, weight, bias, output, mean, inverseStd, rows, columns, epsilon } = args;
  for (let r = 0; r < rows; r++) {
    const start = r * columns;
    let sum = 0;
    for (let j = 0; j < columns; j++) sum += input[start + j];
    const rowMean = sum / columns;
    // Two passes (mean, then squared deviations) avoid the cancellation of E[x²] − E[x]².
    let sumOfSquares = 0;
    for (let j = 0; j < columns; j++) {
      const deviation = input[start + j] - rowMean;
      sumOfSquares += deviation * deviation;
    }
    const inverse = 1 / Math.sqrt(sumOfSquares / columns + epsilon);
    mean[r] = rowMean;
    inverseStd[r] = inverse;
    for (let j = 0; j < columns; j++) {
      const normalized = (input[start + j] - rowMean) * inverse;
      output[start + j] = normalized * weight[j] + (bias ? bias[j] : 0);
    }
  }
}

/**
 * With x̂ = (x − μ)·s and d = g·w: dx = s·(d − mean(d) − x̂·mean(d·x̂)), dw = Σ g·x̂, db = Σ g.
 * Uses the saved float32 mean and 1/std, so x̂ matches what the forward pass produced.
 */
export function layerNormBackward(args: KernelArguments<'layerNormBackward'>): void {
  const { input, weight, mean, inverseStd, gradOutput, gradInput, gradWeight, gradBias } = args;
  const { rows, columns } = args;
  for (let r = 0; r < rows; r++) {
    const start = r * columns;
    const rowMean = mean[r];
    const inverse = inverseStd[r];
    let sumD = 0;
    let sumDTimesNormalized = 0;
    for (let j = 0; j < columns; j++) {
      const d = gradOutput[start + j] * weight[j];
      sumD += d;
      sumDTimesNormalized += d * (input[start + j] - rowMean) * inverse;
    }
    const meanD = sumD / columns;
    const meanDTimesNormalized = sumDTimesNormalized / columns;
    for (let j = 0; j < columns; j++) {
      const g = gradOutput[start + j];
      const normalized = (input[start + j] - rowMean) * inverse;
      gradInput[start + j] += inverse * (g * weight[j] - meanD - normalized * meanDTimesNormalized);
      if (gradWeight) gradWeight[j] += g * normalized;
      if (gradBias) gradBias[j] += g;
    }
  }
}

/** sum = input + residual (rounded to float32 by the store), then `rmsNorm` of sum. */
export function addRmsNorm(args: KernelArguments<'addRmsNorm'>): void {
  const { input, residual, sum, rows, columns } = args;
  for (let i = 0; i < rows * columns; i++) sum[i] = input[i] + residual[i];
  rmsNorm({ ...args, input: sum });
}
