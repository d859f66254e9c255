import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ShapeError } from '../util/errors.js';
import { klHistogram, outOfRegionRate, stageRegressed } from './diagnostics.js';

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
