/**
 * Shared test helpers for src/rl: tolerant comparisons and fast-check arbitraries for padded token
 * batches. Excluded from the build (tsconfig.build.json ignores test-support folders).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';

/** |actual − expected| ≤ absolute + relative·|expected| (NaN equals NaN, ±∞ must match). */
export function assertClose(
  actual: number,
  expected: number,
  { absolute = 1e-9, relative = 1e-9 }: { absolute?: number; relative?: number } = {},
  message = '',
): void {
  if (Number.isNaN(expected)) {
    assert.ok(Number.isNaN(actual), `${message} expected NaN, got ${actual}`);
    return;
  }
  if (!Number.isFinite(expected)) {
    assert.equal(actual, expected, message);
    return;
  }
  const tolerance = absolute + relative * Math.abs(expected);
  assert.ok(
    Math.abs(actual - expected) <= tolerance,
    `${message} expected ${expected}, got ${actual} (difference ${actual - expected}, tolerance ${tolerance})`,
  );
}

export function assertAllClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  tolerance: { absolute?: number; relative?: number } = {},
  message = '',
): void {
  assert.equal(actual.length, expected.length, `${message} length`);
  for (let index = 0; index < expected.length; index++) {
    assertClose(actual[index], expected[index], tolerance, `${message}[${index}]`);
  }
}

/** A padded batch shape with a random 0/1 mask. */
export interface MaskedBatch {
  rows: number;
  length: number;
  mask: Float32Array;
}

export function maskedBatch({
  maxRows = 5,
  maxLength = 7,
  minRows = 1,
}: { maxRows?: number; maxLength?: number; minRows?: number } = {}): fc.Arbitrary<MaskedBatch> {
  return fc
    .record({
      rows: fc.integer({ min: minRows, max: maxRows }),
      length: fc.integer({ min: 1, max: maxLength }),
    })
    .chain(({ rows, length }) =>
      fc
        .array(fc.boolean(), { minLength: rows * length, maxLength: rows * length })
        .map((bits) => ({ rows, length, mask: Float32Array.from(bits, (bit) => (bit ? 1 : 0)) })),
    );
}

/** `count` float64 values in [min, max] (no NaN). */
export function floats(count: number, min: number, max: number): fc.Arbitrary<Float64Array> {
  return fc
    .array(fc.double({ min, max, noNaN: true }), { minLength: count, maxLength: count })
    .map((values) => Float64Array.from(values));
}

/** Values that must never leak out of a mask-0 position. */
export const garbage = fc.constantFrom(Number.NaN, Infinity, -Infinity, 1e30, -1e30, 0, 7.5);

/** A copy of `values` whose mask-0 entries are replaced by draws from `replacements`. */
export function scrambleMasked(
  values: ArrayLike<number>,
  mask: ArrayLike<number>,
  replacements: readonly number[],
): Float64Array {
  const copy = Float64Array.from(values);
  let cursor = 0;
  for (let index = 0; index < copy.length; index++) {
    if (mask[index] === 0) copy[index] = replacements[cursor++ % replacements.length];
  }
  return copy;
}

/** Row-wise log-softmax of random logits: a valid [positions, vocab] log-probability table. */
export function logSoftmaxRows(
  logits: ArrayLike<number>,
  positions: number,
  vocab: number,
): Float64Array {
  const out = new Float64Array(positions * vocab);
  for (let position = 0; position < positions; position++) {
    let largest = -Infinity;
    for (let token = 0; token < vocab; token++)
      largest = Math.max(largest, logits[position * vocab + token]);
    let sum = 0;
    for (let token = 0; token < vocab; token++)
      sum += Math.exp(logits[position * vocab + token] - largest);
    const logSum = largest + Math.log(sum);
    for (let token = 0; token < vocab; token++) {
      out[position * vocab + token] = logits[position * vocab + token] - logSum;
    }
  }
  return out;
}
