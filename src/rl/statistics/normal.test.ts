import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TeamtrError } from '../../util/errors.js';
import { assertClose } from '../test-support/batches.js';
import {
  meanWithStandardError,
  normalCumulative,
  normalQuantile,
  sampleVariance,
} from './index.js';

describe('meanWithStandardError', () => {
  it('matches a hand computation', () => {
    // [1, 2, 3, 6]: mean 3; squared deviations 4 + 1 + 0 + 9 = 14; s² = 14/3;
    // SE = √(14/3 / 4) = √(7/6) = 1.0801234497346435.
    const result = meanWithStandardError([1, 2, 3, 6]);
    assert.equal(result.mean, 3);
    assertClose(result.standardError, Math.sqrt(7 / 6));
    assert.equal(result.count, 4);
    assertClose(sampleVariance([1, 2, 3, 6]), 14 / 3);
  });

  it('is NaN where undefined', () => {
    assert.ok(Number.isNaN(meanWithStandardError([]).mean));
    const single = meanWithStandardError([5]);
    assert.equal(single.mean, 5);
    assert.ok(Number.isNaN(single.standardError));
  });
});

describe('normal distribution', () => {
  it('Φ matches reference values in both tails and the centre', () => {
    // Reference values of the standard normal CDF (to 15+ digits).
    assertClose(normalCumulative(0), 0.5, { relative: 1e-15, absolute: 0 });
    assertClose(normalCumulative(1), 0.8413447460685429, { relative: 1e-13, absolute: 0 });
    assertClose(normalCumulative(-1), 0.15865525393145707, { relative: 1e-13, absolute: 0 });
    assertClose(normalCumulative(-3), 0.0013498980316300933, { relative: 1e-11, absolute: 0 });
    assertClose(normalCumulative(-5), 2.866515718791939e-7, { relative: 1e-11, absolute: 0 });
    assertClose(normalCumulative(-10), 7.619853024160527e-24, { relative: 1e-11, absolute: 0 });
    assert.equal(normalCumulative(Infinity), 1);
    assert.equal(normalCumulative(-Infinity), 0);
  });

  it('the quantile inverts Φ at the usual confidence levels', () => {
    assertClose(normalQuantile(0.95), 1.6448536269514722, { relative: 1e-12 });
    assertClose(normalQuantile(0.975), 1.959963984540054, { relative: 1e-12 });
    assertClose(normalQuantile(0.999), 3.090232306167813, { relative: 1e-12 });
    assertClose(normalQuantile(0.05), -1.6448536269514722, { relative: 1e-12 });
    assert.equal(normalQuantile(0.5), 0);
    for (const probability of [1e-12, 0.01, 0.3, 0.7, 0.9, 0.999999]) {
      assertClose(normalCumulative(normalQuantile(probability)), probability, { relative: 1e-10 });
    }
  });

  it('rejects probabilities outside (0, 1)', () => {
    for (const probability of [0, 1, -0.1, 1.5, Number.NaN]) {
      assert.throws(() => normalQuantile(probability), TeamtrError);
    }
  });
});
