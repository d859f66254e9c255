import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leastSquaresLine } from '../rl/index.js';
import { fitPowerLaw } from './fit.js';
import { createSeededRandom } from './random.js';

test('least squares recovers an exact line and rejects degenerate input', () => {
  const fit = leastSquaresLine([1, 2, 3, 4], [5, 7, 9, 11]);
  assert.ok(Math.abs(fit.slope - 2) < 1e-12);
  assert.ok(Math.abs(fit.intercept - 3) < 1e-12);
  assert.throws(() => leastSquaresLine([1], [1]), RangeError);
  assert.throws(() => leastSquaresLine([2, 2], [1, 3]), RangeError);
});

test('a noisy power law gives its exponent inside a bootstrap interval of sensible width', () => {
  const noise = createSeededRandom(3);
  const groups = [2, 3, 4, 6, 8].map((agentCount) => ({
    agentCount,
    values: Array.from(
      { length: 60 },
      () => 0.01 * agentCount ** 2 * Math.exp(0.3 * noise.nextNormal()),
    ),
  }));
  const fit = fitPowerLaw({ groups, bootstrapSamples: 1000, random: createSeededRandom(4) });
  assert.ok(fit.slope !== null && Math.abs(fit.slope - 2) < 0.1);
  const [low, high] = fit.interval!;
  assert.ok(low < 2 && 2 < high, `[${low}, ${high}]`);
  assert.ok(high - low < 0.3);
  assert.equal(fit.groups[0]!.games, 60);
  // Same seed, same interval.
  const again = fitPowerLaw({ groups, bootstrapSamples: 1000, random: createSeededRandom(4) });
  assert.deepEqual(again.interval, fit.interval);
});

test('a zero mean has no logarithm, so there is no slope and the fit says why', () => {
  const groups = [
    { agentCount: 2, values: [1e-18, 2e-18] },
    { agentCount: 4, values: [3e-18, 1e-18] },
  ];
  const fit = fitPowerLaw({
    groups,
    bootstrapSamples: 100,
    random: createSeededRandom(0),
    negligibleBelow: 1e-12,
  });
  assert.equal(fit.slope, null);
  assert.equal(fit.interval, null);
  assert.match(fit.note!, /not above/);
});
