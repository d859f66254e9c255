import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { largest, smallest } from './extremes.js';

describe('largest and smallest', () => {
  test('agree with Math.max and Math.min on short lists', () => {
    fc.assert(
      fc.property(fc.array(fc.double(), { minLength: 1, maxLength: 50 }), (values) => {
        assert.equal(
          largest(values, (value) => value),
          Math.max(...values),
        );
        assert.equal(
          smallest(values, (value) => value),
          Math.min(...values),
        );
      }),
    );
    // Signed zeros, which a random search found: +0 is larger than −0, as for Math.max.
    for (const values of [
      [0, -0],
      [-0, 0],
    ]) {
      assert.ok(
        Object.is(
          largest(values, (value) => value),
          Math.max(...values),
        ),
      );
      assert.ok(
        Object.is(
          smallest(values, (value) => value),
          Math.min(...values),
        ),
      );
    }
    assert.equal(
      largest([], (value: number) => value, 0),
      0,
    );
    assert.equal(
      smallest([], (value: number) => value),
      Infinity,
    );
  });

  test('take a million items, where spreading them into Math.max overflows the stack', () => {
    const rows = Array.from({ length: 1_000_000 }, (_, index) => [index % 977]);
    assert.throws(() => Math.max(...rows.map((row) => row.length)), RangeError);
    assert.equal(
      largest(rows, (row) => row[0]!),
      976,
    );
    assert.equal(
      smallest(rows, (row) => row[0]!),
      0,
    );
  });
});
