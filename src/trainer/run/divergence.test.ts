import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { saveCheckpoint } from '../../io/checkpoint.js';
import { tinyTeam } from '../../team/test-support/tiny-team.js';
import { NonFiniteWeightsError } from '../../util/errors.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { comparableRecords, directorySnapshot } from '../test-support/run-files.js';
import { train } from '../trainer.js';
import type { UpdateSession } from '../update/engine.js';
import { LocalEngine } from '../update/local/engine.js';
import type { LocalUnit } from '../update/units.js';
import { divergenceHook } from './divergence.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

async function fixture() {
  const created = await createTrainingFixture();
  cleanup.push(created.directory);
  return {
    ...created,
    config: {
      ...created.config,
      checkpointEvery: 1,
      budget: { generatedTokens: 100_000, maxStages: 3 },
    },
  };
}

/**
 * While `body` runs, the `nth` update of `agent` keeps a NaN in its first weight (the step it
 * keeps holds it): a fault the trust-region loop does not see, as a bug in an engine would be.
 */
async function withInjectedNaN<Result>(
  target: { agent: string; nth: number },
  body: () => Promise<Result>,
): Promise<Result> {
  const original = LocalEngine.prototype.beginUpdate;
  let updates = 0;
  LocalEngine.prototype.beginUpdate = async function (plan) {
    const session: UpdateSession = await original.call(this, plan);
    const unit = (this as unknown as { unit: LocalUnit }).unit;
    if (unit.name !== target.agent || ++updates !== target.nth) return session;
    const keep = session.keep.bind(session);
    session.keep = async () => {
      unit.model.namedParameters()[0]!.tensor.data[0] = Number.NaN;
      await keep();
    };
    return session;
  };
  try {
    return await body();
  } finally {
    LocalEngine.prototype.beginUpdate = original;
  }
}

describe('a diverged model is caught where it happens, and never saved', () => {
  test('an update that leaves a NaN stops the run naming stage, update, agent and weight; resume from the intact checkpoint', async () => {
    const { directory, config } = await fixture();
    const runDirectory = path.join(directory, 'run');
    let checkpointBefore: Record<string, string> = {};
    const error = await withInjectedNaN({ agent: 'agent1', nth: 2 }, () =>
      train({
        config,
        runDirectory,
        onProgress: (event) => {
          if (event.kind === 'checkpoint')
            checkpointBefore = directorySnapshot(path.join(runDirectory, 'checkpoint'));
        },
      }),
    ).then(
      () => assert.fail('the run went on with a NaN weight'),
      (caught: unknown) => caught as NonFiniteWeightsError,
    );
    assert.ok(error instanceof NonFiniteWeightsError, String(error));
    assert.match(
      error.message,
      /^the run diverged in stage 2: agent "agent1"'s weight "\S+" became NaN \(element 0\) in update 5 of the run \(agent1's\); nothing of stage 2 was recorded or saved/,
    );
    assert.equal(error.where, 'agent1');
    assert.deepEqual(
      directorySnapshot(path.join(runDirectory, 'checkpoint')),
      checkpointBefore,
      'the checkpoint of stage 1 is as it was saved',
    );
    assert.ok(
      !readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8').includes('"stage":2'),
    );

    const resumed = await train({ config: {}, runDirectory, resume: true });
    assert.equal(resumed.stages, 3);
    const whole = path.join(directory, 'whole');
    await train({ config, runDirectory: whole });
    assert.deepEqual(comparableRecords(runDirectory), comparableRecords(whole));
  });

  test('a swap whose alignment diverges (learning rate 1e30) stops the run before the stage, naming the swap', async () => {
    const { directory, config } = await fixture();
    const runDirectory = path.join(directory, 'run');
    const swap = {
      stage: 2,
      agent: 'agent1',
      model: path.join(directory, 'agent0'),
      alignment: { steps: 3, learningRate: 1e30 },
    };
    await assert.rejects(
      train({ config: { ...config, swaps: [swap] }, runDirectory }),
      (error: Error) =>
        error instanceof NonFiniteWeightsError &&
        /^the run diverged before stage 2: agent "agent1"'s weight "\S+" became (NaN|-?Infinity) \(element \d+\) in the swap of agent1 to .*agent0 before stage 2, in its 3 alignment steps at learning rate 1e\+30; .*swaps\[\]\.alignment\.learningRate/.test(
          error.message,
        ),
    );
    const state = JSON.parse(
      readFileSync(path.join(runDirectory, 'checkpoint', 'state.json'), 'utf8'),
    );
    assert.equal(state.stage, 1);
  });

  test('after a stage, the hook names the updates of the diverged model', async () => {
    const team = tinyTeam({ agents: 3, seed: 3 });
    const hook = divergenceHook({ team } as never, { swaps: [] } as never);
    const stage = { stage: 4, generatedTokens: 0, rewardAfter: 0 };
    const updates = ['agent0', 'agent1', 'agent2'].map((agent) => ({
      agent,
      inRegion: true,
      heldOutImprovement: null,
      heldOutImprovementStandardError: null,
    }));
    const state = { stage: 4, updates: 12 } as never;
    assert.deepEqual(await hook.afterStage(state, stage, updates), []);
    team.agents[2]!.policy.model!.namedParameters()[1]!.tensor.data[3] = Infinity;
    await assert.rejects(
      hook.afterStage(state, stage, updates),
      /^NonFiniteWeightsError: the run diverged in stage 4: agent "agent2"'s weight "\S+" became Infinity \(element 3\) in update 12 of the run \(agent2's\)/,
    );
    await assert.rejects(
      hook.beforeStage(state),
      /diverged before stage 5: .* in the hooks before stage 5/,
    );
  });
});

describe('weights are checked wherever they are saved', () => {
  test('saveCheckpoint refuses NaN or ±Inf in weights and optimizer moments, writing nothing', async () => {
    const { directory } = await fixture();
    const model = tinyTeam({ agents: 1, seed: 5 }).agents[0]!.policy.model!;
    const parameters = model.stateDict();
    parameters[2]!.data[7] = -Infinity;
    const target = path.join(directory, 'refused');
    await assert.rejects(
      saveCheckpoint(target, { config: model.config, parameters }),
      new RegExp(
        `refusing to save a checkpoint to ${target}: weight "${parameters[2]!.name}" is -Infinity at element 7, so the model diverged`,
      ),
    );
    parameters[2]!.data[7] = 0;
    await assert.rejects(
      saveCheckpoint(target, {
        config: model.config,
        parameters,
        optimizer: {
          state: [{ name: 'exp_avg.x', shape: [2], data: new Float32Array([0, NaN]) }],
          scalars: {},
        },
      }),
      /optimizer tensor "exp_avg\.x" is NaN at element 1/,
    );
    assert.throws(() => readFileSync(path.join(target, 'config.json')), /ENOENT/);
  });
});
