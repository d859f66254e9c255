import { ShapeError } from '../../util/errors.js';
import { allocate, allocateZeroed } from '../memory.js';
import { createResult, formatShape, gradientOf, Tensor } from '../tensor.js';

/**
 * Reductions over one axis (or all elements when axis is undefined). The tensor is seen as
 * [outer, axisLength, inner] so every reduction is one strided loop.
 */
interface AxisView {
  outer: number;
  length: number;
  inner: number;
  outputShape: number[];
}

function axisView(input: Tensor, axis: number | undefined, keepDimensions: boolean): AxisView {
  if (axis === undefined) {
    return {
      outer: 1,
      length: input.size,
      inner: 1,
      outputShape: keepDimensions ? input.shape.map(() => 1) : [],
    };
  }
  const rank = input.rank;
  const resolved = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(resolved) || resolved < 0 || resolved >= rank) {
    throw new ShapeError(`axis ${axis} is out of range for shape ${formatShape(input.shape)}`);
  }
  let outer = 1;
  let inner = 1;
  for (let index = 0; index < resolved; index++) outer *= input.shape[index]!;
  for (let index = resolved + 1; index < rank; index++) inner *= input.shape[index]!;
  const outputShape = keepDimensions
    ? input.shape.map((dimension, index) => (index === resolved ? 1 : dimension))
    : input.shape.filter((_dimension, index) => index !== resolved);
  return { outer, length: input.shape[resolved]!, inner, outputShape };
}

function sumWithFactor(input: Tensor, view: AxisView, factor: number, name: string): Tensor {
  const { outer, length, inner } = view;
  const data = input.data;
  const output = allocate(outer * inner);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      let total = 0; // float64 accumulation
      for (let l = 0; l < length; l++) total += data[(o * length + l) * inner + i]!;
      output[o * inner + i] = total * factor;
    }
  }
  return createResult(output, view.outputShape, name, [input], (gradOutput) => {
    const gradient = gradientOf(input);
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) {
        const value = gradOutput[o * inner + i]! * factor;
        for (let l = 0; l < length; l++) gradient[(o * length + l) * inner + i]! += value;
      }
    }
  });
}

export function sum(input: Tensor, axis?: number, keepDimensions = false): Tensor {
  return sumWithFactor(input, axisView(input, axis, keepDimensions), 1, 'sum');
}

export function mean(input: Tensor, axis?: number, keepDimensions = false): Tensor {
  const view = axisView(input, axis, keepDimensions);
  if (view.length === 0) throw new ShapeError('mean over an empty axis');
  return sumWithFactor(input, view, 1 / view.length, 'mean');
}

/** Maximum along an axis; the gradient flows to the first maximal element. NaN wins. */
export function max(input: Tensor, axis?: number, keepDimensions = false): Tensor {
  const view = axisView(input, axis, keepDimensions);
  const { outer, length, inner } = view;
  if (length === 0) throw new ShapeError('max over an empty axis');
  const data = input.data;
  const output = allocate(outer * inner);
  const argmax = new Int32Array(outer * inner);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      let best = -Infinity;
      let bestIndex = 0;
      for (let l = 0; l < length; l++) {
        const value = data[(o * length + l) * inner + i]!;
        if (value > best || Number.isNaN(value)) {
          best = value;
          bestIndex = l;
          if (Number.isNaN(value)) break;
        }
      }
      output[o * inner + i] = best;
      argmax[o * inner + i] = (o * length + bestIndex) * inner + i;
    }
  }
  return createResult(output, view.outputShape, 'max', [input], (gradOutput) => {
    const gradient = gradientOf(input);
    for (let index = 0; index < argmax.length; index++)
      gradient[argmax[index]!]! += gradOutput[index]!;
  });
}

/** Σ over all elements of a·b — a dot product helper used by tests and losses. */
export function sumOfProducts(a: Tensor, b: Float32Array): Tensor {
  if (a.size !== b.length)
    throw new ShapeError(`sumOfProducts: sizes ${a.size} and ${b.length} differ`);
  const data = a.data;
  let total = 0;
  for (let index = 0; index < a.size; index++) total += data[index]! * b[index]!;
  const output = allocateZeroed(1);
  output[0] = total;
  return createResult(output, [], 'sumOfProducts', [a], (gradOutput) => {
    const gradient = gradientOf(a);
    const upstream = gradOutput[0]!;
    for (let index = 0; index < a.size; index++) gradient[index]! += upstream * b[index]!;
  });
}
