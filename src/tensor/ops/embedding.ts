import { ShapeError } from '../../util/errors.js';
import { allocate } from '../memory.js';
import { createResult, formatShape, gradientOf, Tensor } from '../tensor.js';

/** Rows of `table` [vocab, dim] picked by `ids`; output [...shape, dim]. Scatter-add backward. */
export function embedding(
  table: Tensor,
  ids: Int32Array,
  shape: readonly number[] = [ids.length],
): Tensor {
  if (table.rank !== 2)
    throw new ShapeError(`embedding table must be [vocab, dim], got ${formatShape(table.shape)}`);
  const [vocab, dimension] = table.shape as [number, number];
  const output = allocate(ids.length * dimension);
  // A bfloat16 table (frozen) is read in place, each picked row widened (exactly) into the output:
  // `table.data` would widen the whole table on every call.
  const bits = table.bfloat16;
  const data = bits ? null : table.data;
  const outputBits = bits ? new Uint32Array(output.buffer, output.byteOffset, output.length) : null;
  for (let row = 0; row < ids.length; row++) {
    const id = ids[row]!;
    if (!(id >= 0 && id < vocab)) {
      throw new ShapeError(
        `token id ${id} at position ${row} is outside the vocabulary [0, ${vocab})`,
      );
    }
    if (data) {
      output.set(data.subarray(id * dimension, (id + 1) * dimension), row * dimension);
      continue;
    }
    for (let column = 0; column < dimension; column++)
      outputBits![row * dimension + column] = bits![id * dimension + column]! << 16;
  }
  return createResult(output, [...shape, dimension], 'embedding', [table], (gradOutput) => {
    const gradient = gradientOf(table);
    for (let row = 0; row < ids.length; row++) {
      const to = ids[row]! * dimension;
      const from = row * dimension;
      for (let column = 0; column < dimension; column++)
        gradient[to + column]! += gradOutput[from + column]!;
    }
  });
}
