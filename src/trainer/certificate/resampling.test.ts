import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resamplingRule } from './resampling.js';

describe('resamplingRule', () => {
  const update = { epsilon: 1, surrogate: 0.05, secondOrderPenalty: 0.01 };

  test('keeps while 2ε·TV̂ is below κ times the certificate slack', () => {
    // slack 0.04; staleTerm 2·0.015 = 0.03.
    const kept = resamplingRule({ ...update, totalVariation: 0.015, threshold: 1 });
    assert.equal(kept.resample, false);
    assert.ok(Math.abs(kept.staleTerm - 0.03) < 1e-15);
    assert.ok(Math.abs(kept.slack - 0.04) < 1e-15);
    assert.equal(resamplingRule({ ...update, totalVariation: 0.025, threshold: 1 }).resample, true);
    assert.equal(
      resamplingRule({ ...update, totalVariation: 0.025, threshold: 2 }).resample,
      false,
    );
    assert.equal(
      resamplingRule({ ...update, epsilon: 2, totalVariation: 0.015, threshold: 1 }).resample,
      true,
      'ε scales the stale term',
    );
  });

  test('κ = 0 always resamples, even when nothing moved', () => {
    assert.equal(resamplingRule({ ...update, totalVariation: 0, threshold: 0 }).resample, true);
  });

  test('κ = ∞ always keeps, even with no slack', () => {
    const noSlack = { epsilon: 1, surrogate: -0.2, secondOrderPenalty: 0.01 };
    const decision = resamplingRule({ ...noSlack, totalVariation: 1, threshold: Infinity });
    assert.equal(decision.resample, false);
    assert.equal(decision.slack, 0);
    assert.equal(resamplingRule({ ...noSlack, totalVariation: 0, threshold: 1e9 }).resample, true);
  });

  test('refuses a negative threshold and a total variation outside [0, 1]', () => {
    assert.throws(
      () => resamplingRule({ ...update, totalVariation: 0.1, threshold: -1 }),
      /threshold must be ≥ 0/,
    );
    assert.throws(
      () => resamplingRule({ ...update, totalVariation: 1.4, threshold: 1 }),
      /must lie in \[0, 1\]/,
    );
  });
});
