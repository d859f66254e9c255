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
