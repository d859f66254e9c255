import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resamplingRule } from './resampling.js';

describe('resamplingRule', () => {
  const update = { epsilon: 1, surrogate: 0.05, secondOrderPenalty: 0.01, stepTotalVariation: 0.5 };
  const decide = (fields: Partial<Parameters<typeof resamplingRule>[0]>) =>
    resamplingRule({ ...update, totalVariation: 0.03, threshold: 1, ...fields });

  test('keeps while 2ε·TV̂·m is below κ times the certificate slack', () => {
    // slack 0.05 − 0.01 = 0.04; staleTerm 2·1·0.03·0.5 = 0.03.
    const kept = decide({});
    assert.equal(kept.resample, false);
    assert.ok(Math.abs(kept.staleTerm - 0.03) < 1e-15);
    assert.ok(Math.abs(kept.slack - 0.04) < 1e-15);
    assert.equal(decide({ totalVariation: 0.05 }).resample, true, 'staleTerm 0.05 > 0.04');
    assert.equal(decide({ totalVariation: 0.05, threshold: 2 }).resample, false);
    assert.equal(decide({ epsilon: 2 }).resample, true, 'ε scales the stale term');
    assert.equal(decide({ stepTotalVariation: 2 }).resample, true, 'so does the next step');
    assert.equal(decide({ secondOrderPenalty: 0.03 }).resample, true, 'less slack');
  });

  test('κ = 0 always resamples, even when nothing moved', () => {
    assert.equal(decide({ totalVariation: 0, threshold: 0 }).resample, true);
  });

  test('κ = ∞ always keeps, even with no slack', () => {
    const decision = decide({ surrogate: -0.2, totalVariation: 1, threshold: Infinity });
    assert.equal(decision.resample, false);
    assert.equal(decision.slack, 0);
    assert.equal(decide({ surrogate: -0.2, totalVariation: 0, threshold: 1e9 }).resample, true);
  });

  test('refuses a negative threshold, a total variation outside [0, 1] and a negative step', () => {
    assert.throws(() => decide({ threshold: -1 }), /threshold must be ≥ 0/);
    assert.throws(() => decide({ totalVariation: 1.4 }), /must lie in \[0, 1\]/);
    assert.throws(() => decide({ stepTotalVariation: -1 }), /stepTotalVariation must be ≥ 0/);
  });
});
