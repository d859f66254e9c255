import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { loadCheckpoint } from '../io/checkpoint.js';
import { memoryStatistics } from '../tensor/index.js';
import { train } from './trainer.js';
import { createTrainingFixture, records } from './test-support/fixture.js';
import type { MetricsRecord } from './records.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

/** Metrics without wall-clock fields, which legitimately differ between runs. */
function comparable(runDirectory: string): unknown[] {
  return records(runDirectory).map((record) => ({ ...record, elapsedSeconds: undefined }));
}

describe('trainer', () => {
  test('every update ends inside its trust region and records its certificate', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const runDirectory = path.join(fixture.directory, 'run');
    const summary = await train({
      config: {
        ...fixture.config,
        optimizer: { learningRate: 2e-4 },
        trustRegion: { delta: 0.003, epochs: 3, minibatches: 2 },
      },
      runDirectory,
    });
    const updates = records(runDirectory).filter((record) => record.type === 'update');
    assert.equal(updates.length, 12);
    assert.equal(summary.updates, 12);
    assert.equal(memoryStatistics().pooledBytes, 0, 'train() hands its buffer pool back');
    for (const update of updates) {
      assert.ok(
        update.kl <= update.delta + 1e-9,
        `update ${update.globalUpdate}: KL ${update.kl} > δ ${update.delta}`,
      );
      assert.equal(update.inRegion, true);
      assert.ok(update.certificate <= update.surrogate + 1e-12);
      assert.equal(typeof update.offPolicyEstimate, 'number');
    }
    // The high learning rate must actually trip the trust region for this test to mean anything.
    assert.ok(
      updates.some((update) => update.lastStepScale < 1),
      'no update was backed off',
    );
    assert.ok(
      updates.some((update) => update.kl > 0),
      'no update moved the policy',
    );
    const first = updates.filter((update) => update.stage === 1);
    assert.deepEqual(
      first.map((update) => update.agent),
      ['agent2', 'agent1', 'agent0'],
      'reverse turn order',
    );
    assert.equal(first[0]!.occupancyGap, null);
    assert.equal(typeof first[1]!.occupancyGap, 'number');
    assert.ok(first.every((update) => update.measuredImprovement !== null));
    assert.deepEqual(
      first.map((update) => update.resampledFromTurn),
      [0, 2, 1],
      'suffix resampling regenerates from the changed turn',
    );
  });

  test('an interrupted and resumed run ends bit-identical to an uninterrupted one', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const straight = path.join(fixture.directory, 'straight');
    const resumed = path.join(fixture.directory, 'resumed');
    await train({ config: fixture.config, runDirectory: straight });
    const controller = new AbortController();
    const interrupted = await train({
      config: fixture.config,
      runDirectory: resumed,
      signal: controller.signal,
      onProgress: (event) => {
        if (event.kind === 'stage' && event.stage === 3) controller.abort();
      },
    });
    assert.equal(interrupted.interrupted, true);
    assert.equal(interrupted.stages, 3);
    const finished = await train({ config: {}, runDirectory: resumed, resume: true });
    assert.equal(finished.stages, 4);
    assert.deepEqual(comparable(resumed), comparable(straight));
    for (const agent of ['agent0', 'agent1', 'agent2']) {
      const [a, b] = await Promise.all(
        [straight, resumed].map((run) =>
          loadCheckpoint(path.join(run, 'checkpoint', 'units', agent)),
        ),
      );
      assert.deepEqual(
        a!.parameters.map((entry) => Array.from(entry.data)),
        b!.parameters.map((entry) => Array.from(entry.data)),
      );
      assert.deepEqual(
        a!.optimizer!.state.map((entry) => Array.from(entry.data)),
        b!.optimizer!.state.map((entry) => Array.from(entry.data)),
      );
    }
  });

  test('schedules: stale and joint reuse one batch, single trains one shared model', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    for (const schedule of ['sequential-stale', 'joint', 'single'] as const) {
      const runDirectory = path.join(fixture.directory, schedule);
      await train({
        config: { ...fixture.config, schedule, budget: { generatedTokens: 100_000, maxStages: 1 } },
        runDirectory,
      });
      const updates = records(runDirectory).filter((record) => record.type === 'update');
      if (schedule === 'single') {
        assert.equal(updates.length, 1);
        assert.ok(
          updates.every(
            (update) => update.agent === 'agent0' && update.measuredImprovement !== null,
          ),
        );
      } else {
        assert.equal(updates.length, 3);
        assert.ok(
          updates.every(
            (update) => update.measuredImprovement === null && update.resampledFromTurn === 0,
          ),
        );
        const stage = updates.filter((update) => update.stage === 1);
        assert.equal(stage[0]!.stalePenalty, 0);
        if (stage[2]!.kl > 0 || stage[1]!.kl > 0)
          assert.ok(
            stage[2]!.stalePenalty > 0,
            "later stale updates pay for earlier agents' shifts",
          );
      }
    }
    // One stage each: same batch, same first update; later agents differ only through the importance weights
    // sequential-stale gives them for their predecessors' changes.
    const weights = async (schedule: string, agent: string) =>
      (
        await loadCheckpoint(path.join(fixture.directory, schedule, 'checkpoint', 'units', agent))
      ).parameters.map((entry) => Array.from(entry.data));
    assert.deepEqual(await weights('sequential-stale', 'agent2'), await weights('joint', 'agent2'));
    assert.notDeepEqual(
      await weights('sequential-stale', 'agent0'),
      await weights('joint', 'agent0'),
    );
  });

  test('bad run directories are refused without touching them', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    await assert.rejects(
      train({ config: {}, runDirectory: fixture.directory, resume: true }),
      /not a teamtr run directory/,
    );
    await assert.rejects(
      train({ config: fixture.config, runDirectory: fixture.directory }),
      /is not empty/,
    );
    await assert.rejects(
      train({
        config: { ...fixture.config, schedule: 'parallel' as never },
        runDirectory: path.join(fixture.directory, 'x'),
      }),
      /valid: "teamtr", "lazy", "sequential-stale", "joint", "single"/,
    );
    await assert.rejects(
      train({
        config: { ...fixture.config, protocol: { turnOrder: [0, 1, 5] } },
        runDirectory: path.join(fixture.directory, 'y'),
      }),
      /agent 5 does not exist/,
    );
    // Fewer agents than the task's roles, turn order never set: the message names the agents
    // and the fix, not a turnOrder key the user did not write.
    await assert.rejects(
      train({
        config: { ...fixture.config, agents: fixture.config.agents!.slice(0, 1) },
        runDirectory: path.join(fixture.directory, 'z'),
      }),
      (error: Error) =>
        /agents: task "[^"]+" has \d+ roles .* the team has 1 agent; .*protocol\.turnOrder/.test(
          error.message,
        ) && !/turnOrder\[/.test(error.message),
    );
  });
});

describe('held-out measurement of every update', () => {
  test('measures each update out of sample without changing training or its budget', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const config = { ...fixture.config, budget: { generatedTokens: 100_000, maxStages: 2 } };
    const plain = path.join(fixture.directory, 'plain');
    const measured = path.join(fixture.directory, 'measured');
    await train({ config, runDirectory: plain });
    const summary = await train({
      config: { ...config, certificate: { heldOutProblems: 3 } },
      runDirectory: measured,
    });
    const strip = (record: MetricsRecord) => {
      const copy: Record<string, unknown> = { ...record, elapsedSeconds: undefined };
      for (const key of Object.keys(copy)) if (key.startsWith('heldOut')) delete copy[key];
      delete copy.measurementTokens;
      return copy;
    };
    assert.deepEqual(records(measured).map(strip), records(plain).map(strip));
    const updates = records(measured).filter((record) => record.type === 'update');
    for (const key of [
      'heldOutImprovement',
      'heldOutSurrogate',
      'heldOutCertificate',
      'heldOutSecondOrderCertificate',
    ] as const) {
      assert.ok(
        updates.every((record) => Number.isFinite(record[key])),
        key,
      );
    }
    // The held-out bounds subtract their penalties from the held-out surrogate.
    for (const record of updates) {
      assert.ok(record.heldOutCertificate! <= record.heldOutSurrogate!);
      assert.ok(record.heldOutSecondOrderCertificate! <= record.heldOutSurrogate!);
    }
    assert.ok(
      records(plain).every(
        (record) => record.type !== 'update' || record.heldOutImprovement === null,
      ),
    );
    const stages = records(measured).filter((record) => record.type === 'stage');
    assert.ok(stages.every((record) => record.measurementTokens > 0));
    assert.equal(summary.certificates.heldOut?.updates, updates.length);
    assert.equal(summary.certificates.heldOutBatch?.secondOrder.heldOut?.updates, updates.length);
  });
});
