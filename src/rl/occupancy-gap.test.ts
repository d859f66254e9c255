import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { occupancyGap } from './improvement.js';
import { occupancyGapEstimate } from './occupancy-gap.js';

describe('occupancyGapEstimate', () => {
  it('averages (1 − W)_+ by hand', () => {
    // W = 2, 0.5, 1, 0.25: shortfalls 0, 0.5, 0, 0.75 → mean 0.3125.
    const logRatioEarlierAgents = [2, 0.5, 1, 0.25].map(Math.log);
    const estimate = occupancyGapEstimate({ logRatioEarlierAgents });
    assert.ok(Math.abs(estimate.gap - 0.3125) < 1e-15);
    assert.equal(estimate.bias, 0);
    assert.equal(estimate.count, 4);
    const [low, high] = estimate.interval;
    assert.ok(low >= 0 && low <= estimate.gap && estimate.gap <= high && high <= 1);
  });

  it('stays in [0, 1] where ½·mean|W − 1| does not: one heavy weight', () => {
    // 99 trajectories the update made a little less likely, one it made 500× more likely.
    const logRatioEarlierAgents = [
      ...Array.from({ length: 99 }, () => Math.log(0.9)),
      Math.log(500),
    ];
    const old = occupancyGap({ logRatioEarlierAgents });
    assert.ok(old.gap > 1, `the older estimator reads ${old.gap}`);
    const estimate = occupancyGapEstimate({ logRatioEarlierAgents });
    assert.ok(Math.abs(estimate.gap - (99 * 0.1) / 100) < 1e-12);
  });

  it('is 0 with an interval at 0 when nothing moved, exact near W = 1', () => {
    const still = occupancyGapEstimate({ logRatioEarlierAgents: new Float64Array(50) });
    assert.equal(still.gap, 0);
    assert.equal(still.interval[0], 0);
    const tiny = occupancyGapEstimate({ logRatioEarlierAgents: [-1e-12, 1e-12] });
    assert.ok(Math.abs(tiny.gap - 0.5e-12) < 1e-24);
  });

  it('below two trajectories the interval says nothing: [0, 1]', () => {
    assert.deepEqual(occupancyGapEstimate({ logRatioEarlierAgents: [-1] }).interval, [0, 1]);
    assert.ok(Number.isNaN(occupancyGapEstimate({ logRatioEarlierAgents: [] }).gap));
  });

  it('refuses an undefined log W, naming the trajectory', () => {
    assert.throws(
      () => occupancyGapEstimate({ logRatioEarlierAgents: [0, Number.NaN] }),
      /log W of trajectory 1 is NaN/,
    );
  });

  it('any log weights: the estimate and its interval lie in [0, 1]', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -50, max: 50, noNaN: true }), { minLength: 2, maxLength: 60 }),
        (logRatioEarlierAgents) => {
          const { gap, interval } = occupancyGapEstimate({ logRatioEarlierAgents });
          assert.ok(gap >= 0 && gap <= 1);
          assert.ok(interval[0] >= 0 && interval[0] <= gap && gap <= interval[1]);
          assert.ok(interval[1] <= 1);
        },
      ),
    );
  });
});
