import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RandomGenerator } from '../../util/random.js';
import {
  binomialInterval,
  empiricalBernsteinLowerBound,
  empiricalBernsteinRadius,
  normalLowerBound,
} from './bounds.js';
import { mean } from './descriptive.js';

describe('one-sided bounds', () => {
  it('normal: mean − z·SE', () => {
    const bound = normalLowerBound({ mean: 1, standardError: 0.1, alpha: 0.05 });
    assert.ok(Math.abs(bound - (1 - 0.16448536269514722)) < 1e-12);
    assert.throws(() => normalLowerBound({ mean: 0, standardError: 1, alpha: 1 }), /alpha/);
  });

  it('empirical Bernstein matches the formula by hand', () => {
    // [0, 1, 1, 0]: variance 1/3; ln(2/0.1) = ln 20.
    const values = [0, 1, 1, 0];
    const log = Math.log(20);
    const expected = Math.sqrt((2 * (1 / 3) * log) / 4) + (7 * log) / 9;
    const radius = empiricalBernsteinRadius({ values, range: { low: 0, high: 1 }, alpha: 0.1 });
    assert.ok(Math.abs(radius - expected) < 1e-15);
    const bound = empiricalBernsteinLowerBound({ values, range: { low: 0, high: 1 }, alpha: 0.1 });
    assert.ok(Math.abs(bound - (0.5 - expected)) < 1e-15);
  });

  it('refuses values outside the stated range (the bound would not hold)', () => {
    assert.throws(
      () => empiricalBernsteinRadius({ values: [0.5, 2], range: { low: 0, high: 1 }, alpha: 0.05 }),
      /value 2 at index 1 lies outside the stated range \[0, 1\]/,
    );
  });

  it('empirical Bernstein holds at least at its stated rate (seeded simulation)', () => {
    // Bernoulli(0.1) samples of 50: skewed, bounded. The bound must fall below 0.1 in ≥ 90%.
    const random = new RandomGenerator('bernstein-coverage');
    const trials = 2000;
    let held = 0;
    let normalHeld = 0;
    for (let trial = 0; trial < trials; trial++) {
      const values = Array.from({ length: 50 }, () => (random.nextDouble() < 0.1 ? 1 : 0));
      const range = { low: 0, high: 1 };
      if (empiricalBernsteinLowerBound({ values, range, alpha: 0.1 }) <= 0.1) held++;
      const standardError = Math.sqrt((mean(values) * (1 - mean(values))) / 49);
      if (normalLowerBound({ mean: mean(values), standardError, alpha: 0.1 }) <= 0.1) normalHeld++;
    }
    assert.ok(held / trials >= 0.9, `held ${held}/${trials}`);
    // The same samples show why a guarantee is needed: the normal bound falls short of 90%.
    assert.ok(normalHeld / trials < held / trials, `${normalHeld} vs ${held}`);
  });
});

describe('binomialInterval (Wilson)', () => {
  it('matches a reference value and stays in [0, 1] at the ends', () => {
    // 81 of 100 at 95%: [0.7222, 0.8748] (Wilson, z = 1.95996).
    const [low, high] = binomialInterval({ successes: 81, trials: 100 });
    assert.ok(Math.abs(low - 0.72216) < 1e-4 && Math.abs(high - 0.87482) < 1e-4, `${low} ${high}`);
    const [allLow, allHigh] = binomialInterval({ successes: 50, trials: 50 });
    assert.ok(allHigh === 1 && allLow > 0.9 && allLow < 1);
    assert.equal(binomialInterval({ successes: 0, trials: 10 })[0], 0);
    assert.throws(() => binomialInterval({ successes: 11, trials: 10 }), /11 of 10/);
  });
});
