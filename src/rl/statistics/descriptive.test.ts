import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  effectiveSampleSize,
  mean,
  quantile,
  quantileOfSorted,
  sampleVariance,
  standardError,
} from './descriptive.js';

describe('descriptive statistics', () => {
  it('quantiles interpolate between order statistics (type 7)', () => {
    assert.equal(quantileOfSorted([0, 10], 0.25), 2.5);
    assert.equal(quantileOfSorted([1, 2, 3, 4, 5], 0.5), 3);
    assert.equal(quantileOfSorted([1, 2, 3, 4, 5], 0), 1);
    assert.equal(quantileOfSorted([1, 2, 3, 4, 5], 1), 5);
    // Position 0.9·3 = 2.7 between 30 and 40.
    assert.ok(Math.abs(quantile([40, 10, 30, 20], 0.9) - 37) < 1e-12);
    assert.ok(Number.isNaN(quantileOfSorted([], 0.5)));
    assert.throws(() => quantileOfSorted([1, 2], 1.5), /q must lie in \[0, 1\]/);
    assert.throws(() => quantile([1, Number.NaN], 0.5), /NaN/);
  });

  it('the standard error is s/√n, and undefined (NaN) for one value', () => {
    assert.ok(Math.abs(standardError([1, 2, 3, 4]) - Math.sqrt(5 / 3 / 4)) < 1e-15);
    assert.ok(Number.isNaN(standardError([7])));
    assert.ok(Number.isNaN(mean([])));
    assert.ok(Number.isNaN(sampleVariance([3])));
  });

  it('sums left to right, so a mean equals the plain loop to the bit', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1 }),
        (values) => {
          let total = 0;
          for (const value of values) total += value;
          assert.equal(mean(values), total / values.length);
          assert.equal(mean(Float64Array.from(values)), total / values.length);
        },
      ),
    );
  });

  it('quantiles are monotone in q and stay within the sample', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1e3, max: 1e3, noNaN: true }), { minLength: 1, maxLength: 30 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (values, first, second) => {
          const sorted = [...values].sort((a, b) => a - b);
          const [low, high] = first <= second ? [first, second] : [second, first];
          assert.ok(quantileOfSorted(sorted, low) <= quantileOfSorted(sorted, high));
          assert.ok(quantileOfSorted(sorted, low) >= sorted[0]!);
          assert.ok(quantileOfSorted(sorted, high) <= sorted.at(-1)!);
        },
      ),
    );
  });

  it("the effective sample size is Kish's (Σ W)² / Σ W², from 1 to n, with no overflow", () => {
    // Weights 50, ½, ½, ½: 51.5² / 2500.75.
    const logWeights = [50, 0.5, 0.5, 0.5].map(Math.log);
    assert.ok(Math.abs(effectiveSampleSize(logWeights) - (51.5 * 51.5) / 2500.75) < 1e-12);
    assert.equal(effectiveSampleSize(new Float64Array(5)), 5);
    assert.equal(effectiveSampleSize([]), 0);
    // exp(1000) is Infinity; factoring out the largest log-weight keeps the sums finite.
    assert.equal(effectiveSampleSize([1000, 1000]), 2);
    assert.ok(Math.abs(effectiveSampleSize([1000, 0]) - 1) < 1e-12);
  });

  it('the effective sample size ignores a common factor of the weights and lies in [1, n]', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -50, max: 50, noNaN: true }), { minLength: 1, maxLength: 30 }),
        fc.double({ min: -100, max: 100, noNaN: true }),
        (logWeights, shift) => {
          const size = effectiveSampleSize(logWeights);
          const shifted = effectiveSampleSize(logWeights.map((value) => value + shift));
          assert.ok(size >= 1 - 1e-12 && size <= logWeights.length + 1e-9, `${size}`);
          assert.ok(Math.abs(size - shifted) <= 1e-9 * logWeights.length, `${size} vs ${shifted}`);
        },
      ),
    );
  });
});
