import { ShapeError } from '../../util/errors.js';
import { allocate } from '../memory.js';
import { createResult, formatShape, gradientOf, shapeSize, Tensor } from '../tensor.js';

/** A copy with a new shape of the same size; one dimension may be -1 (inferred). */
export function reshape(input: Tensor, shape: readonly number[]): Tensor {
  const resolved = resolveShape(input, shape);
  const output = allocate(input.size);
  output.set(input.data);
  return createResult(output, resolved, 'reshape', [input], (gradOutput) => {
    const gradient = gradientOf(input);
    for (let index = 0; index < input.size; index++) gradient[index]! += gradOutput[index]!;
  });
}

function resolveShape(input: Tensor, shape: readonly number[]): number[] {
  const inferred = shape.filter((dimension) => dimension === -1).length;
  if (inferred > 1) throw new ShapeError(`reshape: at most one -1 in ${formatShape(shape)}`);
  const known = shape.reduce(
    (product, dimension) => (dimension === -1 ? product : product * dimension),
    1,
  );
  const resolved = shape.map((dimension) =>
    dimension === -1 ? input.size / (known || 1) : dimension,
  );
  if (
    shapeSize(resolved) !== input.size ||
    resolved.some((dimension) => !Number.isInteger(dimension))
  ) {
    throw new ShapeError(`cannot reshape ${formatShape(input.shape)} into ${formatShape(shape)}`);
  }
  return resolved;
}

function stridesOf(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let index = shape.length - 1; index >= 0; index--) {
    strides[index] = stride;
    stride *= shape[index]!;
  }
  return strides;
}

/** Permutes axes (a copy). `transpose(x)` on a matrix swaps its two axes. */
export function transpose(input: Tensor, axes?: readonly number[]): Tensor {
  const rank = input.rank;
  const permutation = axes ?? [...Array(rank).keys()].reverse();
  if (
    permutation.length !== rank ||
    new Set(permutation).size !== rank ||
    permutation.some((axis) => axis < 0 || axis >= rank)
  ) {
    throw new ShapeError(
      `transpose: ${formatShape(permutation)} is not a permutation of ${rank} axes`,
    );
  }
  const outputShape = permutation.map((axis) => input.shape[axis]!);
  const inputStrides = stridesOf(input.shape);
  const sourceStrides = permutation.map((axis) => inputStrides[axis]!);
  const sourceIndex = new Int32Array(input.size);
  const counter = new Array<number>(rank).fill(0);
  let offset = 0;
  for (let flat = 0; flat < input.size; flat++) {
    sourceIndex[flat] = offset;
    for (let axis = rank - 1; axis >= 0; axis--) {
      counter[axis]!++;
      offset += sourceStrides[axis]!;
      if (counter[axis]! < outputShape[axis]!) break;
      offset -= sourceStrides[axis]! * counter[axis]!;
      counter[axis] = 0;
    }
  }
  const data = input.data;
  const output = allocate(input.size);
  for (let flat = 0; flat < input.size; flat++) output[flat] = data[sourceIndex[flat]!]!;
  return createResult(output, outputShape, 'transpose', [input], (gradOutput) => {
    const gradient = gradientOf(input);
    for (let flat = 0; flat < input.size; flat++)
      gradient[sourceIndex[flat]!]! += gradOutput[flat]!;
  });
}

/** Elements [start, end) along `axis` (a copy). */
export function slice(input: Tensor, axis: number, start: number, end: number): Tensor {
  const rank = input.rank;
  const resolved = axis < 0 ? axis + rank : axis;
  const length = input.shape[resolved];
  if (length === undefined)
    throw new ShapeError(`slice: axis ${axis} out of range for ${formatShape(input.shape)}`);
  if (!(
    Number.isInteger(start) &&
    Number.isInteger(end) &&
    0 <= start &&
    start <= end &&
    end <= length
  )) {
    throw new ShapeError(
      `slice: [${start}, ${end}) out of range for axis ${axis} of length ${length}`,
    );
  }
  const outer = shapeSize(input.shape.slice(0, resolved));
  const inner = shapeSize(input.shape.slice(resolved + 1));
  const width = end - start;
  const outputShape = input.shape.map((dimension, index) =>
    index === resolved ? width : dimension,
  );
  const data = input.data;
  const output = allocate(outer * width * inner);
  for (let o = 0; o < outer; o++) {
    const from = (o * length + start) * inner;
    output.set(data.subarray(from, from + width * inner), o * width * inner);
  }
  return createResult(output, outputShape, 'slice', [input], (gradOutput) => {
    const gradient = gradientOf(input);
    for (let o = 0; o < outer; o++) {
      const to = (o * length + start) * inner;
      const from = o * width * inner;
      for (let index = 0; index < width * inner; index++)
        gradient[to + index]! += gradOutput[from + index]!;
    }
  });
}

/** Joins tensors along `axis`; every other dimension must agree. */
export function concat(inputs: readonly Tensor[], axis: number): Tensor {
  if (inputs.length === 0) throw new ShapeError('concat needs at least one tensor');
  const first = inputs[0]!;
  const rank = first.rank;
  const resolved = axis < 0 ? axis + rank : axis;
  if (resolved < 0 || resolved >= rank)
    throw new ShapeError(`concat: axis ${axis} out of range for rank ${rank}`);
  for (const input of inputs) {
    const compatible =
      input.rank === rank &&
      input.shape.every(
        (dimension, index) => index === resolved || dimension === first.shape[index],
      );
    if (!compatible) {
      throw new ShapeError(
        `concat: shape ${formatShape(input.shape)} does not match ${formatShape(first.shape)} off axis ${axis}`,
      );
    }
  }
  const outer = shapeSize(first.shape.slice(0, resolved));
  const inner = shapeSize(first.shape.slice(resolved + 1));
  const total = inputs.reduce((length, input) => length + input.shape[resolved]!, 0);
  const outputShape = first.shape.map((dimension, index) =>
    index === resolved ? total : dimension,
  );
  const output = allocate(outer * total * inner);
  const offsets: number[] = [];
  let offset = 0;
  for (const input of inputs) {
    offsets.push(offset);
    const width = input.shape[resolved]! * inner;
    const data = input.data;
    for (let o = 0; o < outer; o++)
      output.set(data.subarray(o * width, (o + 1) * width), o * total * inner + offset);
    offset += width;
  }
  return createResult(output, outputShape, 'concat', inputs, (gradOutput) => {
    inputs.forEach((input, inputIndex) => {
      if (!input.requiresGrad) return;
      const gradient = gradientOf(input);
      const width = input.shape[resolved]! * inner;
      for (let o = 0; o < outer; o++) {
        const from = o * total * inner + offsets[inputIndex]!;
        for (let index = 0; index < width; index++)
          gradient[o * width + index]! += gradOutput[from + index]!;
      }
    });
  });
}
