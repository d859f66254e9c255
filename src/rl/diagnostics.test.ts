import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ShapeError } from '../util/errors.js';
import {
  averageRanks,
  klHistogram,
  outOfRegionRate,
  rankCorrelation,
  stageRegressed,
} from './diagnostics.js';
import { assertClose } from './test-support/batches.js';

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

describe('stageRegressed', () => {
  it('flags a paired drop beyond zThreshold standard errors, never a noiseless change', () => {
    assert.equal(stageRegressed({ improvement: -0.05, standardError: 0.02 }), true);
    assert.equal(stageRegressed({ improvement: -0.03, standardError: 0.02 }), false);
    assert.equal(stageRegressed({ improvement: -0.03, standardError: 0.02, zThreshold: 1 }), true);
    assert.equal(stageRegressed({ improvement: -0.5, standardError: 0 }), false);
    assert.equal(stageRegressed({ improvement: 0.5, standardError: 0.01 }), false);
  });
});

describe('outOfRegionRate', () => {
  it('counts KL strictly above δ, with one δ or one per update', () => {
    // 0.02 and 0.011 exceed 0.01; 0.01 itself is in region.
    assert.deepEqual(outOfRegionRate({ updateKl: [0.005, 0.01, 0.02, 0.011], delta: 0.01 }), {
      rate: 0.5,
      outOfRegionCount: 2,
      count: 4,
    });
    // Per-update δ [0.01, 0.005, 0.05, 0.02]: only 0.01 > 0.005.
    assert.equal(
      outOfRegionRate({ updateKl: [0.005, 0.01, 0.02, 0.011], delta: [0.01, 0.005, 0.05, 0.02] })
        .rate,
      0.25,
    );
    assert.throws(() => outOfRegionRate({ updateKl: [0.1], delta: [0.1, 0.2] }), ShapeError);
  });
});

describe('klHistogram', () => {
  const values = [0, 0.004, 0.01, 0.016, 0.03, NaN, Infinity];

  it('bins values over [0, max(2δ, largest finite)] and counts in/out of region', () => {
    // upper = max(0.02, 0.03) = 0.03, 4 bins of 0.0075:
    //   0, 0.004 → bin 0; 0.01 → bin 1; 0.016 → bin 2; 0.03 (= upper) → last bin; ∞ → overflow.
    const histogram = klHistogram({ values, delta: 0.01, bins: 4 });
    assert.deepEqual(histogram.edges, [0, 0.0075, 0.015, 0.0225, 0.03]);
    assert.deepEqual(histogram.counts, [2, 1, 1, 1]);
    assert.equal(histogram.overflowCount, 1);
    assert.equal(histogram.nonFiniteCount, 1);
    assert.equal(histogram.inRegionCount, 3); // 0, 0.004, 0.01
    assert.equal(histogram.outOfRegionCount, 3); // 0.016, 0.03, ∞
  });

  it('honours an explicit upper edge', () => {
    // upper 0.02: bins of 0.005; 0.03 now overflows too.
    const histogram = klHistogram({ values, delta: 0.01, bins: 4, upper: 0.02 });
    assert.deepEqual(histogram.counts, [2, 0, 1, 1]);
    assert.equal(histogram.overflowCount, 2);
  });

  it('rejects bad parameters', () => {
    assert.throws(() => klHistogram({ values, delta: 0 }), /delta must be > 0/);
    assert.throws(() => klHistogram({ values, delta: 0.01, bins: 0 }), /positive integer/);
  });
});
