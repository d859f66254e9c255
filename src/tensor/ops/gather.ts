import { ShapeError } from '../../util/errors.js';
import { allocate } from '../memory.js';
import { createResult, formatShape, gradientOf, Tensor } from '../tensor.js';

/**
 * Rows of x seen as [rows, features] (every axis but the last folded): output
 * [indices.length, features]. Backward scatters (adds) into the picked rows.
 */
export function selectRows(input: Tensor, indices: Int32Array): Tensor {
  const features = input.shape[input.rank - 1];
  if (features === undefined) throw new ShapeError('selectRows needs rank ≥ 1');
  const rows = features === 0 ? 0 : input.size / features;
  const data = input.data;
  const output = allocate(indices.length * features);
  for (let index = 0; index < indices.length; index++) {
    const row = indices[index]!;
    if (!(row >= 0 && row < rows))
      throw new ShapeError(
        `selectRows: row ${row} outside [0, ${rows}) of ${formatShape(input.shape)}`,
      );
    output.set(data.subarray(row * features, (row + 1) * features), index * features);
  }
  return createResult(output, [indices.length, features], 'selectRows', [input], (gradOutput) => {
    const gradient = gradientOf(input);
    for (let index = 0; index < indices.length; index++) {
      const to = indices[index]! * features;
      const from = index * features;
      for (let column = 0; column < features; column++)
        gradient[to + column]! += gradOutput[from + column]!;
    }
  });
}

/**
 * Rows of `source` (seen as [rows, features]) before each sequence of `input` [batch, length,
 * features]: output [batch, before + length, features], sequence b's first `before` rows being
 * source rows `indices[b·before + s]` (−1: a row of zeros), then its own. Keys and values a
 * prefix pass computed once, gathered for every sequence that begins with that prefix.
 * Backward adds each output row's gradient into the source row it came from (so a source row
 * several sequences picked gets their sum, in sequence order) and copies the rest to `input`.
 */
export function prependRows(source: Tensor, indices: Int32Array, input: Tensor): Tensor {
  const [batch, length, features] = input.shape as [number, number, number];
  const before = batch === 0 ? 0 : indices.length / batch;
  const sourceRows = source.size / (source.shape[source.rank - 1] ?? 1);
  if (
    input.rank !== 3 ||
    source.shape[source.rank - 1] !== features ||
    !Number.isInteger(before) ||
    indices.some((row) => !(row >= -1 && row < sourceRows))
  )
    throw new ShapeError(
      `prependRows: ${indices.length} rows (−1 or in [0, ${sourceRows})) of ${formatShape(source.shape)} before ${formatShape(input.shape)}`,
    );
  const width = before + length;
  const sourceData = source.data;
  const inputData = input.data;
  const output = allocate(batch * width * features);
  for (let b = 0; b < batch; b++) {
    for (let s = 0; s < before; s++) {
      const row = indices[b * before + s]!;
      const to = (b * width + s) * features;
      if (row < 0) output.fill(0, to, to + features);
      else output.set(sourceData.subarray(row * features, (row + 1) * features), to);
    }
    const own = inputData.subarray(b * length * features, (b + 1) * length * features);
    output.set(own, (b * width + before) * features);
  }
  const outputShape = [batch, width, features];
  return createResult(output, outputShape, 'prependRows', [source, input], (gradOutput) => {
    if (source.requiresGrad) {
      const gradient = gradientOf(source);
      for (let b = 0; b < batch; b++)
        for (let s = 0; s < before; s++) {
          const row = indices[b * before + s]!;
          if (row < 0) continue;
          const from = (b * width + s) * features;
          for (let column = 0; column < features; column++)
            gradient[row * features + column]! += gradOutput[from + column]!;
        }
    }
    if (input.requiresGrad) {
      const gradient = gradientOf(input);
      for (let b = 0; b < batch; b++) {
        const from = (b * width + before) * features;
        const to = b * length * features;
        for (let index = 0; index < length * features; index++)
          gradient[to + index]! += gradOutput[from + index]!;
      }
    }
  });
}
