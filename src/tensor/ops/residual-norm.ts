import { getBackend } from '../../backend/index.js';
import { allocate, release } from '../memory.js';
import { isGradientEnabled, Tensor } from '../tensor.js';
import { add } from './elementwise.js';
import { rmsNorm } from './normalization.js';

/**
 * A residual add and the RMSNorm after it, as a pre-norm block runs them: returns
 * sum = input + residual and rmsNorm(sum, weight, ε). With no graph to record (decode steps,
 * scoring without gradients) both are one backend call (`addRmsNorm`, one pass over the row,
 * and one op where a decode step's layer had four); with one, they are `add` and `rmsNorm`.
 * Both ways give the same bits (the backend suite checks it), so a log-prob recorded while
 * sampling still equals the one a training pass computes.
 */
export function addRmsNorm(
  input: Tensor,
  residual: Tensor,
  weight: Tensor,
  epsilon: number,
): { sum: Tensor; normed: Tensor } {
  const recording =
    isGradientEnabled() && (input.requiresGrad || residual.requiresGrad || weight.requiresGrad);
  const columns = weight.size;
  const fusable =
    !recording &&
    weight.rank === 1 &&
    columns > 0 &&
    input.shape[input.rank - 1] === columns &&
    input.rank === residual.rank &&
    input.shape.every((dimension, axis) => dimension === residual.shape[axis]);
  if (!fusable) {
    const sum = add(input, residual);
    return { sum, normed: rmsNorm(sum, weight, epsilon) };
  }
  const rows = input.size / columns;
  const sum = allocate(input.size);
  const output = allocate(input.size);
  const inverseRms = allocate(rows);
  getBackend().addRmsNorm({
    input: input.data,
    residual: residual.data,
    weight: weight.data,
    sum,
    output,
    inverseRms,
    rows,
    columns,
    epsilon,
  });
  release(inverseRms);
  return { sum: new Tensor(sum, input.shape), normed: new Tensor(output, input.shape) };
}
