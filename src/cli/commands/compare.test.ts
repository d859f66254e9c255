import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TrainSummary } from '../../trainer/summary.js';
import { formatComparison, pairWithBaseline, summarizeSchedule } from './compare.js';

const summary = (seed: number, accuracy: number) =>
  ({
    seed,
    runDirectory: `run-${seed}`,
    evalBefore: { accuracy: 0.5 },
    evalAfter: { accuracy },
    regressions: 0,
    generatedTokens: 1000,
    wallSeconds: 1,
    certificates: { outOfRegionRate: 0, cumulativeRankCorrelation: null },
  }) as unknown as TrainSummary;

test('compare heads its table with the paired difference to a named baseline', () => {
  // Seeds differ by 30 points; teamtr is 2, 3 and 4 points behind the stale schedule on each.
  const stale = [0.4, 0.7, 0.5].map((accuracy, seed) => summary(seed, accuracy));
  const fresh = [0.38, 0.67, 0.46].map((accuracy, seed) => summary(seed, accuracy));
  const bySchedule = new Map([
    ['sequential-stale', stale],
    ['teamtr', fresh],
  ]);
  const rows = pairWithBaseline(
    [summarizeSchedule('sequential-stale', stale), summarizeSchedule('teamtr', fresh)],
    bySchedule,
    'sequential-stale',
  );
  assert.equal(rows[0]!.differenceToBaseline, null);
  const difference = rows[1]!.differenceToBaseline!;
  assert.ok(Math.abs(difference.value + 0.03) < 1e-12);
  assert.ok(difference.interval![1] < 0, 'every seed behind: the interval excludes 0');
  const table = formatComparison(rows, 'sequential-stale');
  assert.match(table, /Δ acc vs sequential-stale \(points\)/);
  assert.match(table, /teamtr\s+−3\.0 \[−4\.0, −2\.0\]/);
  assert.match(table, /95% percentile bootstrap over seeds/);
});
