import { getBackend } from '../../backend/index.js';
import { ShapeError } from '../../util/errors.js';
import { allocate } from '../memory.js';
import { createResult, formatShape, gradientOf, gradientToWrite, Tensor } from '../tensor.js';

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
    const backend = getBackend();
    if (source.requiresGrad) {
      // Rows of the source are summed into in sequence order. A prefix's tokens sit in
      // consecutive source rows, so each sequence's picked rows are one run: one `axpy` (y + 1·x,
      // the bits of a float32 +=) per run instead of a JavaScript loop over every entry.
      const gradient = gradientOf(source);
      for (let b = 0; b < batch; b++)
        forEachRun(indices, b * before, (b + 1) * before, (first, row, rows) => {
          const from = (b * width + first - b * before) * features;
          backend.axpy({
            alpha: 1,
            x: gradOutput.subarray(from, from + rows * features),
            y: gradient.subarray(row * features, (row + rows) * features),
          });
        });
    }
    if (input.requiresGrad) {
      // Every entry of the input's gradient gets exactly one row: written, not added to zeros.
      const { gradient, beta } = gradientToWrite(input);
      for (let b = 0; b < batch; b++) {
        const from = (b * width + before) * features;
        backend.axpy({
          alpha: 1,
          x: gradOutput.subarray(from, from + length * features),
          y: gradient.subarray(b * length * features, (b + 1) * length * features),
          beta,
        });
      }
    }
  });
}

/**
 * Calls `run(first, row, rows)` for each maximal run of consecutive source rows (row, row + 1,
 * …) in indices[begin, end), skipping −1s: `first` is the run's position in `indices`.
 */
function forEachRun(
  indices: Int32Array,
  begin: number,
  end: number,
  run: (first: number, row: number, rows: number) => void,
): void {
  let first = begin;
  while (first < end) {
    const row = indices[first]!;
    let next = first + 1;
    if (row >= 0) while (next < end && indices[next] === row + (next - first)) next++;
    if (row >= 0) run(first, row, next - first);
    first = next;
  }
}
