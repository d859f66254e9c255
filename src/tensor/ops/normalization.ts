import { getBackend } from '../../backend/index.js';
import { ShapeError } from '../../util/errors.js';
import { allocate, release } from '../memory.js';
import { createResult, formatShape, gradientOf, Tensor } from '../tensor.js';

/** Normalizes over the last `weight.size` elements: the last axis, or each head of it. */
function rowsOf(
  input: Tensor,
  weight: Tensor,
  operation: string,
): { rows: number; columns: number } {
  const columns = weight.size;
  const last = input.shape[input.rank - 1];
  if (last === undefined || weight.rank !== 1 || columns === 0 || last % columns !== 0) {
    throw new ShapeError(
      `${operation}: weight ${formatShape(weight.shape)} does not match input ${formatShape(input.shape)}`,
    );
  }
  return { rows: input.size / columns, columns };
}

/** RMSNorm over the last axis: x / sqrt(mean(x²) + ε) ⊙ weight (Llama, Qwen). */
export function rmsNorm(input: Tensor, weight: Tensor, epsilon: number): Tensor {
  const { rows, columns } = rowsOf(input, weight, 'rmsNorm');
  const backend = getBackend();
  const output = allocate(input.size);
  const inverseRms = allocate(rows);
  backend.rmsNorm({
    input: input.data,
    weight: weight.data,
    output,
    inverseRms,
    rows,
    columns,
    epsilon,
  });
  return createResult(
    output,
    input.shape,
    'rmsNorm',
    [input, weight],
    (gradOutput) => {
      backend.rmsNormBackward({
        input: input.data,
        weight: weight.data,
        inverseRms,
        gradOutput,
        gradInput: gradientOf(input),
        gradWeight: weight.requiresGrad ? gradientOf(weight) : null,
        rows,
        columns,
      });
    },
    () => release(inverseRms),
  );
}

/** LayerNorm over the last axis (GPT-2). */
export function layerNorm(
  input: Tensor,
  weight: Tensor,
  bias: Tensor | null,
  epsilon: number,
): Tensor {
  const { rows, columns } = rowsOf(input, weight, 'layerNorm');
  if (bias && bias.size !== columns)
    throw new ShapeError(
      `layerNorm: bias ${formatShape(bias.shape)} does not match ${columns} columns`,
    );
  const backend = getBackend();
  const output = allocate(input.size);
  const mean = allocate(rows);
  const inverseStd = allocate(rows);
  backend.layerNorm({
    input: input.data,
    weight: weight.data,
    bias: bias?.data ?? null,
    output,
    mean,
    inverseStd,
    rows,
    columns,
    epsilon,
  });
  const inputs = bias ? [input, weight, bias] : [input, weight];
  return createResult(
    output,
    input.shape,
    'layerNorm',
    inputs,
    (gradOutput) => {
      backend.layerNormBackward({
        input: input.data,
        weight: weight.data,
        mean,
        inverseStd,
        gradOutput,
        gradInput: gradientOf(input),
        gradWeight: weight.requiresGrad ? gradientOf(weight) : null,
        gradBias: bias?.requiresGrad ? gradientOf(bias) : null,
        rows,
        columns,
      });
    },
    () => {
      release(mean);
      release(inverseStd);
    },
  );
}
