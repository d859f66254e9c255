import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ShapeError } from '../../util/errors.js';
import { assertClose } from '../test-support/batches.js';
import { averageRanks, leastSquaresLine, rankCorrelation } from './correlation.js';

describe('rankCorrelation', () => {
  it('is ±1 for monotone relations and handles ties with average ranks', () => {
    assertClose(rankCorrelation({ x: [1, 2, 3, 4], y: [10, 20, 30, 40] }), 1, { absolute: 1e-15 });
    assertClose(rankCorrelation({ x: [1, 2, 3, 4], y: [4, 3, 2, 1] }), -1, { absolute: 1e-15 });
    // x = [1, 2, 2, 3] → ranks [1, 2.5, 2.5, 4]; y = [1, 3, 2, 4] → ranks [1, 3, 2, 4].
    // Deviations from 2.5: dx = [−1.5, 0, 0, 1.5], dy = [−1.5, 0.5, −0.5, 1.5];
    // cov 4.5, Σdx² 4.5, Σdy² 5 → 4.5/√22.5 = 3/√10 = 0.9486832980505138.
    assert.deepEqual([...averageRanks([1, 2, 2, 3])], [1, 2.5, 2.5, 4]);
    assertClose(rankCorrelation({ x: [1, 2, 2, 3], y: [1, 3, 2, 4] }), 3 / Math.sqrt(10), {
      absolute: 1e-15,
    });
  });

  it('is NaN when undefined and rejects mismatched or NaN input', () => {
    assert.ok(Number.isNaN(rankCorrelation({ x: [1], y: [2] })));
    assert.ok(Number.isNaN(rankCorrelation({ x: [1, 1, 1], y: [1, 2, 3] })));
    // Eight equal values: a mean accumulated as Σ x/n would round and leave a spurious ±1.
    assert.ok(Number.isNaN(rankCorrelation({ x: [0, 0, 0, 0, 0, 0], y: [0, 0, 0, 0, 0, 0] })));
    assert.ok(Number.isNaN(rankCorrelation({ x: [1, 2, 3, 4, 5, 6], y: [0, 0, 0, 0, 0, 0] })));
    assert.throws(() => rankCorrelation({ x: [1, 2], y: [1] }), ShapeError);
    assert.throws(() => rankCorrelation({ x: [1, NaN], y: [1, 2] }), /NaN at index 1/);
  });

  it('without ties equals 1 − 6Σd²/(n(n² − 1)), and ignores monotone transforms', () => {
    fc.assert(
      fc.property(
        fc
          .uniqueArray(fc.integer({ min: -1000, max: 1000 }), { minLength: 3, maxLength: 20 })
          .chain((x) =>
            fc.record({
              x: fc.constant(x),
              y: fc.uniqueArray(fc.integer({ min: -1000, max: 1000 }), {
                minLength: x.length,
                maxLength: x.length,
              }),
            }),
          ),
        ({ x, y }) => {
          const n = x.length;
          const rankX = averageRanks(x);
          const rankY = averageRanks(y);
          let squares = 0;
          for (let index = 0; index < n; index++) squares += (rankX[index] - rankY[index]) ** 2;
          const closedForm = 1 - (6 * squares) / (n * (n * n - 1));
          const correlation = rankCorrelation({ x, y });
          assertClose(correlation, closedForm, { absolute: 1e-12 });
          assertClose(
            rankCorrelation({ x: x.map((value) => Math.exp(value / 100)), y }),
            correlation,
            {
              absolute: 1e-12,
            },
          );
          assertClose(rankCorrelation({ x: y, y: x }), correlation, { absolute: 1e-12 });
        },
      ),
    );
  });
});

describe('leastSquaresLine', () => {
  it('recovers an exact line and rejects degenerate input', () => {
    const fit = leastSquaresLine([1, 2, 3, 4], [5, 7, 9, 11]);
    assert.ok(Math.abs(fit.slope - 2) < 1e-12);
    assert.ok(Math.abs(fit.intercept - 3) < 1e-12);
    assert.throws(() => leastSquaresLine([1], [1]), RangeError);
    assert.throws(() => leastSquaresLine([2, 2], [1, 3]), /two distinct x values/);
  });
});
