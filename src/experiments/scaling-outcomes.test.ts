import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { MetricsRecord } from '../trainer/records.js';
import type { ScalingRun } from './scaling-analysis.js';
import { matchedUpdateMark, outcomes, pairedOutcomes, readRun } from './scaling-outcomes.js';

/** A run evaluated at the start, at update marks 4, 8, … up to `updates`, and at its end. */
function run(
  schedule: string,
  seed: number,
  figures: { start: number; end: number; updates: number; tokens: number; atUpdates: number[] },
): ScalingRun {
  const records: MetricsRecord[] = [
    {
      type: 'eval',
      stage: 0,
      generatedTokens: 0,
      updates: 0,
      at: 'start',
      accuracy: figures.start,
    },
    ...figures.atUpdates.map((accuracy, index) => ({
      type: 'eval',
      stage: index + 1,
      generatedTokens: 0,
      updates: 4 * (index + 1),
      at: 'updates',
      mark: 4 * (index + 1),
      accuracy,
    })),
    ...Array.from({ length: figures.updates }, (_unused, index) => ({
      type: 'update',
      globalUpdate: index,
    })),
    { type: 'stage', stage: 1, generatedTokens: figures.tokens, regression: false },
    { type: 'eval', stage: 1, generatedTokens: figures.tokens, at: 'end', accuracy: figures.end },
  ] as unknown as MetricsRecord[];
  return { agents: 2, schedule, seed, records };
}

describe('paired outcomes', () => {
  // Seeds start 30 points apart; teamtr ends 5, 4 and 6 points behind the stale schedule.
  const runs = [0, 1, 2].flatMap((seed) => [
    run('sequential-stale', seed, {
      start: 0.3 + 0.3 * (seed % 2),
      end: 0.5 + 0.3 * (seed % 2),
      updates: 12,
      tokens: 1000 + seed,
      atUpdates: [0.4, 0.45, 0.5],
    }),
    run('teamtr', seed, {
      start: 0.3 + 0.3 * (seed % 2),
      end: 0.5 + 0.3 * (seed % 2) - [0.05, 0.04, 0.06][seed]!,
      updates: 8,
      tokens: 1010,
      atUpdates: [0.42, 0.47],
    }),
  ]);

  test('matched updates: the largest update mark every schedule of the seed reached', () => {
    const readings = runs.filter((entry) => entry.seed === 0).map(readRun);
    assert.equal(matchedUpdateMark(readings), 8);
    assert.ok(
      Number.isNaN(
        matchedUpdateMark([
          readRun(run('x', 0, { start: 0, end: 0, updates: 0, tokens: 0, atUpdates: [] })),
        ]),
      ),
    );
  });

  test('the headline is the within-seed difference to the baseline, with its interval over seeds', () => {
    const [row] = pairedOutcomes(runs, 'sequential-stale');
    assert.equal(row!.schedule, 'teamtr');
    assert.equal(row!.seeds, 3);
    assert.ok(Math.abs(row!.atMatchedTokens.value + 0.05) < 1e-12);
    // Three differences all below 0: the interval excludes 0, within the lowest and highest.
    const [low, high] = row!.atMatchedTokens.interval!;
    assert.ok(low >= -0.06 - 1e-12 && high <= -0.04 + 1e-12 && high < 0);
    assert.deepEqual([row!.ahead, row!.behind], [0, 3]);
    // At 8 updates teamtr reads 0.47 against the stale schedule's 0.45 on every seed.
    assert.ok(Math.abs(row!.atMatchedUpdates.value - 0.02) < 1e-12);
  });

  test('each cell: tokens matched within seeds, accuracies as per-run means', () => {
    const stale = outcomes(runs).find((row) => row.schedule === 'sequential-stale')!;
    assert.equal(stale.matchedUpdates, 8);
    assert.ok(Math.abs(stale.accuracyAtMatchedUpdates - 0.45) < 1e-12);
    assert.ok(Math.abs(stale.startAccuracy - 0.4) < 1e-12);
    // Seed 0: 1000 and 1010 tokens, mean 1005: the stale run is 5/1005 off (the largest).
    assert.ok(Math.abs(stale.tokenSpread - 5 / 1005) < 1e-15);
    assert.equal(stale.updates, 12);
  });
});
