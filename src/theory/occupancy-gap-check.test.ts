import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mean, standardError } from '../rl/index.js';
import { occupancyGapCases, occupancyGapTrials } from './occupancy-gap-check.js';
import { createSeededRandom } from './random.js';

const cases = occupancyGapCases(0);
const alpha = 0.1;
const trialsOf = (index: number, trials: number) =>
  occupancyGapTrials({
    ...cases[index]!,
    trajectories: 64,
    trials,
    alpha,
    random: createSeededRandom(100 + index),
  });
const coveredEnough = (covered: number, trials: number) =>
  covered / trials >= 1 - alpha - 3 * Math.sqrt((alpha * (1 - alpha)) / trials);

test('trust-region updates: unbiased, in [0, 1], the interval covers at its stated rate', () => {
  for (let index = 0; index < 4; index++) {
    const trials = trialsOf(index, 150);
    const label = cases[index]!.label;
    assert.ok(trials.exact > 0.05, `${label}: the update moved the team (${trials.exact})`);
    assert.ok(trials.estimates.every((gap) => gap >= 0 && gap <= 1));
    const bias = mean(trials.estimates) - trials.exact;
    assert.ok(
      Math.abs(bias) < 4 * standardError(trials.estimates),
      `${label}: mean ${mean(trials.estimates)} vs exact ${trials.exact}`,
    );
    assert.ok(coveredEnough(trials.covered, 150), `${label}: ${trials.covered}/150`);
  }
});

test('heavy-tailed W: ½·mean|W − 1| passes 1, the total-variation estimate stays exact', () => {
  const trials = trialsOf(4, 400);
  // Agent 0's two tokens are i.i.d. under both teams: TV = Σ (Q − P)_+ over the 4 token pairs.
  const pairs = [
    [0.02 * 0.02, 0.25],
    [0.02 * 0.98, 0.25],
    [0.98 * 0.02, 0.25],
    [0.98 * 0.98, 0.25],
  ];
  const exact = pairs.reduce((total, [q, p]) => total + Math.max(0, q! - p!), 0);
  assert.ok(Math.abs(trials.exact - exact) < 1e-12, `${trials.exact} vs ${exact}`);
  const largest = Math.max(...trials.halfAbsoluteDeviations);
  assert.ok(largest > 1, `the older estimator's largest reading ${largest}`);
  assert.ok(trials.estimates.every((gap) => gap >= 0 && gap <= 1));
  const bias = mean(trials.estimates) - exact;
  assert.ok(Math.abs(bias) < 4 * standardError(trials.estimates), `bias ${bias}`);
  assert.ok(coveredEnough(trials.covered, 400));
});
