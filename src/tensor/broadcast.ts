import { ShapeError } from '../util/errors.js';
import { formatShape, shapeSize } from './tensor.js';

/** NumPy broadcasting: align trailing dimensions; each pair must be equal or contain a 1. */
export function broadcastShapes(left: readonly number[], right: readonly number[]): number[] {
  const rank = Math.max(left.length, right.length);
  const result = new Array<number>(rank);
  for (let index = 0; index < rank; index++) {
    const a = left[left.length - rank + index] ?? 1;
    const b = right[right.length - rank + index] ?? 1;
    if (a !== b && a !== 1 && b !== 1) {
      throw new ShapeError(
        `shapes ${formatShape(left)} and ${formatShape(right)} cannot be broadcast together`,
      );
    }
    result[index] = a === 1 ? b : a;
  }
  return result;
}

/**
 * How an operand of shape `shape` maps into an output of shape `outputShape`:
 * - `identity`: same shape;
 * - `scalar`: one element;
 * - `suffix`: operand repeats every `shape`-size elements (e.g. a bias [C] on [N, C]);
 * - `general`: an explicit index per output element.
 */
export type BroadcastMap =
  | { kind: 'identity' }
  | { kind: 'scalar' }
  | { kind: 'suffix'; period: number }
  | { kind: 'general'; indices: Int32Array };

export function broadcastMap(
  shape: readonly number[],
  outputShape: readonly number[],
): BroadcastMap {
  const size = shapeSize(shape);
  const outputSize = shapeSize(outputShape);
  if (size === outputSize) return { kind: 'identity' };
  if (size === 1) return { kind: 'scalar' };
  const trimmed = shape.slice(shape.findIndex((dimension) => dimension !== 1));
  const suffix = outputShape.slice(outputShape.length - trimmed.length);
  if (trimmed.every((dimension, index) => dimension === suffix[index])) {
    return { kind: 'suffix', period: size };
  }
  return { kind: 'general', indices: generalIndices(shape, outputShape) };
}

function generalIndices(shape: readonly number[], outputShape: readonly number[]): Int32Array {
  const rank = outputShape.length;
  const strides = new Array<number>(rank).fill(0);
  let stride = 1;
  for (let index = shape.length - 1; index >= 0; index--) {
    const outputAxis = rank - shape.length + index;
    strides[outputAxis] = shape[index] === 1 ? 0 : stride;
    stride *= shape[index]!;
  }
  const outputSize = shapeSize(outputShape);
  const indices = new Int32Array(outputSize);
  const counter = new Array<number>(rank).fill(0);
  let offset = 0;
  for (let flat = 0; flat < outputSize; flat++) {
    indices[flat] = offset;
    for (let axis = rank - 1; axis >= 0; axis--) {
      counter[axis]!++;
      offset += strides[axis]!;
      if (counter[axis]! < outputShape[axis]!) break;
      offset -= strides[axis]! * counter[axis]!;
      counter[axis] = 0;
    }
  }
  return indices;
}

export function mapIndex(map: BroadcastMap, flat: number): number {
  switch (map.kind) {
    case 'identity':
      return flat;
    case 'scalar':
      return 0;
    case 'suffix':
      return flat % map.period;
    case 'general':
      return map.indices[flat]!;
  }
}

/** Materializes the map as an index array (for loops that want a single code path). */
export function materialize(map: BroadcastMap, outputSize: number): Int32Array | null {
  if (map.kind === 'identity') return null;
  if (map.kind === 'general') return map.indices;
  const indices = new Int32Array(outputSize);
  for (let flat = 0; flat < outputSize; flat++) indices[flat] = mapIndex(map, flat);
  return indices;
}
