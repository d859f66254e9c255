import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { certificateLowerBound } from './certificate-confidence.js';
import { normalQuantile } from './statistics/index.js';

// Three prompts of two trajectories: cluster totals 3, 7, 2; pooled mean 12/6 = 2.
const perTrajectory = [1, 2, 3, 4, 0, 2];
const clusterIds = [0, 0, 1, 1, 2, 2];

describe('certificateLowerBound', () => {
  it('normal: pooled mean − z·(cluster-robust SE), by hand', () => {
    // Σ_g (T_g − 2·2)² = 1 + 9 + 4 = 14; SE = √(3/2 · 14) / 6 = √21 / 6.
    const result = certificateLowerBound({ perTrajectory, clusterIds, method: 'normal' });
    assert.equal(result.estimate, 2);
    assert.equal(result.clusters, 3);
    assert.ok(Math.abs(result.standardError - Math.sqrt(21) / 6) < 1e-15);
    const expected = 2 - normalQuantile(0.95) * (Math.sqrt(21) / 6);
    assert.ok(Math.abs(result.lowerBound - expected) < 1e-12);
    const shifted = certificateLowerBound({
      perTrajectory,
      clusterIds,
      method: 'normal',
      offset: 0.5,
    });
    assert.equal(shifted.estimate, 1.5);
    assert.ok(Math.abs(shifted.lowerBound - (expected - 0.5)) < 1e-12);
  });

  it('equal clusters: the cluster-robust SE is sd(cluster means)/√G', () => {
    const { standardError } = certificateLowerBound({
      perTrajectory,
      clusterIds,
      method: 'normal',
    });
    // Cluster means 1.5, 3.5, 1: sd² = ((0.5)² + 1.5² + 1²)/2 = 1.75; /3 → √(7/12).
    assert.ok(Math.abs(standardError - Math.sqrt(7 / 12)) < 1e-15);
  });

  it('clustered bootstrap: the α-quantile of resampled pooled means, seeded', () => {
    const bound = (seed: string, alpha = 0.05) =>
      certificateLowerBound({
        perTrajectory,
        clusterIds,
        alpha,
        random: new RandomGenerator(seed),
        samples: 500,
      }).lowerBound;
    assert.equal(bound('a'), bound('a'));
    // The smallest pooled mean a resample can have is all-cluster-2: 1.
    assert.ok(bound('a') >= 1 && bound('a') < 2);
    assert.ok(bound('a', 0.2) >= bound('a', 0.05));
  });

  it('empirical Bernstein needs an a priori range and clusters of one size', () => {
    const result = certificateLowerBound({
      perTrajectory,
      clusterIds,
      method: 'empirical-bernstein',
      range: { low: 0, high: 4 },
    });
    assert.ok(result.lowerBound < result.estimate);
    assert.throws(
      () => certificateLowerBound({ perTrajectory, clusterIds, method: 'empirical-bernstein' }),
      /needs `range`/,
    );
    assert.throws(
      () =>
        certificateLowerBound({
          perTrajectory,
          clusterIds: [0, 0, 0, 1, 1, 2],
          method: 'empirical-bernstein',
          range: { low: 0, high: 4 },
        }),
      /clusters of one size/,
    );
  });

  it('says what is missing or wrong', () => {
    assert.throws(() => certificateLowerBound({ perTrajectory, clusterIds }), /needs `random`/);
    assert.throws(
      () => certificateLowerBound({ perTrajectory, clusterIds: [0, 1], method: 'normal' }),
      /2 cluster ids for 6 trajectories/,
    );
    assert.throws(
      () => certificateLowerBound({ perTrajectory: [1, Number.NaN], method: 'normal' }),
      /trajectory 1 is NaN/,
    );
    assert.throws(
      () => certificateLowerBound({ perTrajectory, method: 'exact' as never }),
      /unknown method "exact" \(methods: normal, empirical-bernstein, clustered-bootstrap\)/,
    );
    assert.throws(
      () => certificateLowerBound({ perTrajectory, alpha: 0, method: 'normal' }),
      /alpha/,
    );
    assert.ok(
      Number.isNaN(certificateLowerBound({ perTrajectory: [1], method: 'normal' }).lowerBound),
    );
  });
});
