import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { loadCheckpoint } from '../io/checkpoint.js';
import type { TrainConfigInput } from './config/train-config.js';
import type { EvaluationRecord, StageRecord, UpdateRecord } from './records.js';
import { createTrainingFixture, records } from './test-support/fixture.js';
import { train } from './trainer.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

const updatesOf = (run: string) =>
  records(run).filter((record): record is UpdateRecord => record.type === 'update');

/** The records with what legitimately differs between two schedules' runs left out. */
function comparable(runDirectory: string): unknown[] {
  return records(runDirectory).map((record) => ({
    ...record,
    elapsedSeconds: undefined,
    schedule: undefined,
    resampling: undefined,
  }));
}

async function weights(runDirectory: string, agent: string): Promise<number[][]> {
  const checkpoint = await loadCheckpoint(path.join(runDirectory, 'checkpoint', 'units', agent));
  return checkpoint.parameters.map((entry) => Array.from(entry.data));
}

async function run(config: TrainConfigInput, directory: string, name: string): Promise<string> {
  const runDirectory = path.join(directory, name);
  await train({ config, runDirectory });
  return runDirectory;
}

describe('the lazy schedule', () => {
  test('threshold 0 is teamtr and threshold infinity is sequential-stale, bit for bit', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const base = { ...fixture.config, budget: { generatedTokens: 100_000, maxStages: 2 } };
    const pairs = [
      ['teamtr', 0],
      ['sequential-stale', 'infinity'],
    ] as const;
    for (const [schedule, threshold] of pairs) {
      const reference = await run({ ...base, schedule }, fixture.directory, schedule);
      const lazy = await run(
        { ...base, schedule: 'lazy', lazy: { threshold } },
        fixture.directory,
        `lazy-${threshold}`,
      );
      assert.deepEqual(comparable(lazy), comparable(reference), `lazy ${threshold} ≡ ${schedule}`);
      for (const agent of ['agent0', 'agent1', 'agent2'])
        assert.deepEqual(await weights(lazy, agent), await weights(reference, agent));
      const decisions = updatesOf(lazy).map((update) => update.resampling);
      // Two decisions per stage of three updates; none after a stage's last update.
      assert.equal(decisions.filter((decision) => decision).length, 4);
      assert.ok(
        decisions.every((decision) => !decision || decision.resampled === (threshold === 0)),
      );
    }
    assert.ok(
      updatesOf(path.join(fixture.directory, 'teamtr')).every(
        (update) => update.resampling === null,
      ),
    );
  });

  test('records each decision with the estimate and the threshold it compared', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const lazy = await run(
      {
        ...fixture.config,
        schedule: 'lazy',
        lazy: { threshold: 0.5 },
        budget: { generatedTokens: 100_000, maxStages: 3 },
      },
      fixture.directory,
      'lazy',
    );
    const updates = updatesOf(lazy);
    updates.forEach((update, index) => {
      const decision = update.resampling;
      if (!decision) return;
      assert.equal(decision.threshold, 0.5);
      assert.ok(decision.totalVariation >= 0 && decision.totalVariation <= 1);
      assert.equal(decision.staleTerm, 2 * decision.totalVariation * decision.stepTotalVariation);
      assert.equal(decision.stepTotalVariation, update.stepTotalVariation);
      assert.equal(decision.resampled, !(decision.staleTerm < 0.5 * decision.slack));
      assert.ok(decision.effectiveSampleSize > 0 && decision.effectiveSampleSize <= 1 + 1e-12);
      // A kept batch: the next update works on it and pays for the shift it does not show.
      const next = updates[index + 1]!;
      if (!decision.resampled) {
        assert.equal(update.measuredImprovement, null);
        assert.ok(next.stalePenalty > 0 || update.kl === 0);
      } else assert.equal(next.stalePenalty, 0);
    });
    const kinds = new Set(
      updates.flatMap((update) => (update.resampling ? [update.resampling.resampled] : [])),
    );
    assert.deepEqual([...kinds].sort(), [false, true], 'both decisions occur at this threshold');
  });
});

describe('budgets stop at the token', () => {
  test('every schedule ends within two trajectories of the budget, its last batch cut', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    // Two trajectories: 3 turns of at most 2 tokens each.
    const budget = 1_000;
    const two = 2 * 3 * 2;
    let cut = false;
    for (const schedule of ['teamtr', 'lazy', 'sequential-stale', 'joint'] as const) {
      const runDirectory = path.join(fixture.directory, schedule);
      const summary = await train({
        config: { ...fixture.config, schedule, budget: { generatedTokens: budget } },
        runDirectory,
      });
      assert.ok(
        summary.generatedTokens >= budget && summary.generatedTokens < budget + two,
        `${schedule}: ${summary.generatedTokens} tokens for a budget of ${budget}`,
      );
      const stages = records(runDirectory).filter(
        (record): record is StageRecord => record.type === 'stage',
      );
      assert.deepEqual(
        stages.map((stage) => stage.budgetReached),
        stages.map((_stage, index) => index === stages.length - 1),
      );
      assert.equal(stages.at(-1)!.generatedTokens, summary.generatedTokens);
      const updates = updatesOf(runDirectory);
      assert.ok(updates.every((update) => update.batchPrompts! <= 4 && update.batchPrompts! >= 1));
      assert.ok(
        updates.every((update) => update.batchTrajectories! >= 2 * update.batchPrompts! - 4),
      );
      cut ||= updates.some((update) => update.batchTrajectories! < 24);
    }
    assert.ok(cut, 'some run trained on a batch the budget cut');
  });
});

describe('evaluations at update and token marks', () => {
  test('stand at exact update counts and at the team that crossed each token mark', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const runDirectory = await run(
      {
        ...fixture.config,
        schedule: 'sequential-stale',
        budget: { generatedTokens: 900 },
        evaluation: { problems: 4, every: 1_000, everyUpdates: 2, everyTokens: 250 },
      },
      fixture.directory,
      'marks',
    );
    const all = records(runDirectory);
    const updateCount = all.filter((record) => record.type === 'update').length;
    const tokens = Math.max(
      ...all.map((record) => ('generatedTokens' in record ? record.generatedTokens : 0)),
    );
    const evaluations = all.filter((record): record is EvaluationRecord => record.type === 'eval');
    const at = (moment: string) => evaluations.filter((record) => record.at === moment);
    assert.deepEqual(
      at('updates').map((record) => record.mark),
      Array.from({ length: Math.floor(updateCount / 2) }, (_unused, index) => 2 * (index + 1)),
    );
    // The marks below the budget; the budget itself is the closing evaluation's.
    assert.ok(tokens >= 900);
    assert.deepEqual(
      at('tokens').map((record) => record.mark),
      [250, 500, 750],
    );
    // Each stands after exactly the updates it counts, in the file as in the run.
    for (const evaluation of [...at('updates'), ...at('tokens')]) {
      const before = all
        .slice(0, all.indexOf(evaluation))
        .filter((record) => record.type === 'update');
      assert.equal(before.length, evaluation.updates);
      if (evaluation.at === 'updates') assert.equal(evaluation.updates, evaluation.mark);
      else assert.ok(evaluation.generatedTokens >= evaluation.mark!);
    }
    // A stale stage samples before its updates: every token mark comes before a stage's first update.
    assert.ok(at('tokens').every((record) => record.updates! % 3 === 0));
    assert.equal(at('start').length, 1);
    assert.equal(at('end').length, 1);
  });
});
