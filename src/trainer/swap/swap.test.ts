import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { loadCheckpoint } from '../../io/checkpoint.js';
import { tinyTask } from '../../team/test-support/tiny-team.js';
import {
  swapConfigSchema,
  trainConfigSchema,
  type TrainConfigInput,
} from '../config/train-config.js';
import { openRun } from '../open-run.js';
import type { StageRecord, SwapRecord, SwapRecoveryRecord } from '../records.js';
import type { RunState } from '../run/run-state.js';
import { applySwap, recoveryRecords, type SwapTarget } from './swap.js';
import { agentConfigsAtStage } from './swap-plan.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { comparableRecords, readRecords, savedUnit } from '../test-support/run-files.js';
import { createSwapModels } from '../test-support/swap-models.js';
import { train } from '../trainer.js';
import type { LocalUnit } from '../update/units.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

async function fixtureWithSwapModels() {
  const fixture = await createTrainingFixture();
  cleanup.push(fixture.directory);
  return { ...fixture, models: await createSwapModels(fixture.directory) };
}

/** Named arrays as [name, values] pairs in name order (safetensors files sort their entries). */
function byName(
  entries: ReadonlyArray<{ name: string; data: Float32Array }>,
): Array<[string, number[]]> {
  return entries
    .map((entry): [string, number[]] => [entry.name, Array.from(entry.data)])
    .sort((a, b) => a[0].localeCompare(b[0]));
}

/** Weights, optimizer moments and step of every unit, as plain values. */
function unitState(target: SwapTarget) {
  return new Map(
    (target.built.units as LocalUnit[]).map((unit) => {
      const optimizer = unit.optimizer.stateDict();
      return [
        unit.name,
        {
          parameters: byName(unit.model.stateDict()),
          moments: byName(optimizer.moments),
          step: optimizer.step,
        },
      ] as const;
    }),
  );
}

describe('swaps', () => {
  test('a swap leaves the other agents bit-identical and gives the newcomer its model and a fresh optimizer', async () => {
    const { directory, config, models } = await fixtureWithSwapModels();
    const runDirectory = path.join(directory, 'run');
    await train({
      config: { ...config, budget: { generatedTokens: 100_000, maxStages: 2 } },
      runDirectory,
    });
    const opened = await openRun(runDirectory);
    const state = (await opened.run.readCheckpointState()) as RunState;
    const noAlignment = swapConfigSchema.parse({ stage: 3, agent: 'agent1', model: models.wide });
    const withAlignment = swapConfigSchema.parse({
      stage: 3,
      agent: 'agent2',
      model: models.otherAlphabet,
      alignment: { steps: 4, mode: 'sft+kl' },
    });
    const target: SwapTarget = {
      config: { ...opened.config, swaps: [noAlignment, withAlignment] },
      task: opened.task,
      built: opened.built,
      tokenizers: new Map(opened.built.units.map((unit) => [unit.name, null])),
    };
    const checkpointed = await loadCheckpoint(
      path.join(runDirectory, 'checkpoint', 'units', 'agent0'),
    );
    const tokensBefore = state.generatedTokens;
    const before = unitState(target);
    assert.ok(
      before.get('agent0')!.step > 0 && before.get('agent1')!.step > 0,
      'the run must have trained the agents for this test to mean anything',
    );

    const first = await applySwap(target, noAlignment, state);
    const afterFirst = unitState(target);
    assert.deepEqual(afterFirst.get('agent0'), before.get('agent0'));
    assert.deepEqual(afterFirst.get('agent2'), before.get('agent2'));
    // ...which is also exactly what the run without the swap checkpointed at the swap's stage.
    assert.deepEqual(afterFirst.get('agent0')!.parameters, byName(checkpointed.parameters));
    assert.deepEqual(afterFirst.get('agent0')!.moments, byName(checkpointed.optimizer!.state));
    const incoming = await loadCheckpoint(models.wide);
    const swapped = (target.built.units as LocalUnit[]).find((unit) => unit.name === 'agent1')!;
    assert.equal(swapped.model.config.hiddenSize, 24);
    assert.equal(target.built.team.agents[1]!.policy.model, swapped.model);
    assert.deepEqual(
      afterFirst.get('agent1')!.parameters,
      byName(incoming.parameters),
      'budget 0: the newcomer is the incoming checkpoint',
    );
    assert.equal(afterFirst.get('agent1')!.step, 0);
    assert.ok(
      afterFirst.get('agent1')!.moments.every(([, moment]) => moment.every((value) => value === 0)),
    );
    assert.deepEqual(target.tokenizers.get('agent1'), incoming.tokenizer);

    const record: SwapRecord = first.record;
    assert.equal(record.stage, 3);
    assert.equal(record.generatedTokens, tokensBefore);
    assert.equal(record.fromModel, path.join(directory, 'agent1'));
    assert.equal(record.toModel, models.wide);
    assert.equal(record.rewardAfterAlignment, null);
    assert.equal(record.alignmentMode, 'none');
    assert.ok(Math.abs(record.shock - (record.rewardAfterSwap - record.rewardBefore)) < 1e-12);
    assert.ok(record.swapTokens > 0 && state.generatedTokens === tokensBefore + record.swapTokens);
    assert.equal(record.recoveryThreshold, record.rewardBefore - record.rewardBeforeStandardError);

    const second = await applySwap(target, withAlignment, state);
    const afterSecond = unitState(target);
    assert.deepEqual(
      afterSecond.get('agent0'),
      before.get('agent0'),
      'alignment trains the newcomer only',
    );
    assert.deepEqual(afterSecond.get('agent1'), afterFirst.get('agent1'));
    assert.equal(
      afterSecond.get('agent2')!.step,
      0,
      'alignment uses its own optimizer; RL starts fresh',
    );
    assert.equal(second.record.alignmentSteps, 4);
    assert.equal(second.record.alignmentMode, 'sft');
    assert.match(second.record.alignmentNote ?? '', /fell back to sft/);
    assert.equal(typeof second.record.rewardAfterAlignment, 'number');
    assert.ok(second.record.alignmentTokens > 0);
  });

  test('resume across a swap equals an uninterrupted run, whether the checkpoint is before or after it', async () => {
    const { directory, config, models } = await fixtureWithSwapModels();
    const swapping: TrainConfigInput = {
      ...config,
      // agent1 trains LoRA adapters: the swapped-in model must get them too, on both paths.
      agents: config.agents!.map((agent) =>
        agent.name === 'agent1' ? { ...agent, lora: { rank: 2 } } : agent,
      ),
      swaps: [
        { stage: 3, agent: 'agent1', model: models.wide, alignment: { steps: 3, mode: 'kl' } },
        {
          stage: 3,
          agent: 'agent2',
          model: models.otherAlphabet,
          alignment: { steps: 3, mode: 'sft' },
        },
      ],
    };
    const straight = path.join(directory, 'straight');
    await train({ config: swapping, runDirectory: straight });
    for (const stopAt of [2, 3]) {
      const resumed = path.join(directory, `stopped-at-${stopAt}`);
      const controller = new AbortController();
      const interrupted = await train({
        config: swapping,
        runDirectory: resumed,
        signal: controller.signal,
        onProgress: (event) => {
          if (event.kind === 'stage' && event.stage === stopAt) controller.abort();
        },
      });
      assert.equal(interrupted.stages, stopAt);
      const finished = await train({ config: {}, runDirectory: resumed, resume: true });
      assert.equal(finished.stages, 4);
      assert.deepEqual(
        comparableRecords(resumed),
        comparableRecords(straight),
        `stopped at stage ${stopAt}`,
      );
      for (const unit of ['agent0', 'agent1', 'agent2'])
        assert.deepEqual(
          await savedUnit(resumed, unit),
          await savedUnit(straight, unit),
          `${unit}, stopped at stage ${stopAt}`,
        );
    }
    const swaps = readRecords(straight).filter(
      (record): record is SwapRecord => record.type === 'swap',
    );
    assert.deepEqual(
      swaps.map((record) => [
        record.stage,
        record.agent,
        record.alignmentMode,
        record.alignmentSteps,
      ]),
      [
        [3, 'agent1', 'kl', 3],
        [3, 'agent2', 'sft', 3],
      ],
    );
    const order = readRecords(straight).map((record) => `${record.type}@${record.stage}`);
    assert.ok(
      order.indexOf('swap@3') > order.lastIndexOf('stage@2') &&
        order.indexOf('swap@3') < order.indexOf('stage@3'),
      'swaps come right before their stage',
    );
    const opened = await openRun(straight);
    const swappedUnit = (opened.built.units as LocalUnit[]).find((unit) => unit.name === 'agent1')!;
    assert.equal(
      swappedUnit.model.config.hiddenSize,
      24,
      'openRun builds the team as of its checkpoint',
    );
    const trainable = swappedUnit.model.trainableParameters().map(({ name }) => name);
    assert.ok(
      trainable.length > 0 && trainable.every((name) => /lora/i.test(name)),
      `the newcomer trains adapters, as the agent did: ${trainable.join(', ')}`,
    );
    const savedTokenizer = (
      await loadCheckpoint(path.join(straight, 'checkpoint', 'units', 'agent2'))
    ).tokenizer;
    assert.deepEqual(
      savedTokenizer,
      (await loadCheckpoint(models.otherAlphabet)).tokenizer,
      "the checkpoint saves the newcomer's tokenizer",
    );
  });

  test('recovery: the first stage reaching the pre-swap reward minus its standard error, recorded once', () => {
    const state: RunState = {
      stage: 0,
      generatedTokens: 0,
      updates: 0,
      metricsBytes: 0,
      elapsedSeconds: 0,
      evaluationBefore: null,
      swaps: { applied: [], pendingRecovery: [{ agent: 'b', swapStage: 4, threshold: 0.5 }] },
    };
    const stage = (number: number, rewardAfter: number) =>
      ({ type: 'stage', stage: number, generatedTokens: 100 * number, rewardAfter }) as StageRecord;
    assert.deepEqual(recoveryRecords(state, stage(4, 0.49)), []);
    const recovered: SwapRecoveryRecord[] = recoveryRecords(state, stage(5, 0.5));
    assert.deepEqual(recovered, [
      {
        type: 'swap-recovery',
        stage: 5,
        generatedTokens: 500,
        agent: 'b',
        swapStage: 4,
        stagesToRecover: 2,
        threshold: 0.5,
        rewardAfter: 0.5,
      },
    ]);
    assert.deepEqual(recoveryRecords(state, stage(6, 0.9)), []);
    assert.deepEqual(
      recoveryRecords({ ...state, swaps: { applied: [], pendingRecovery: [] } }, stage(6, 0.9)),
      [],
      'runs without swaps record nothing',
    );
  });

  test('the team at a stage has every swap up to it, the latest per agent', () => {
    const config = trainConfigSchema.parse({
      agents: [
        { name: 'x', model: 'm0' },
        { name: 'y', model: 'm1', rolePrompt: 'r' },
      ],
      swaps: [
        { stage: 5, agent: 'y', model: 'm3' },
        { stage: 2, agent: 'y', model: 'm2', learningRate: 0.5 },
      ],
    });
    const task = tinyTask(2);
    assert.deepEqual(
      agentConfigsAtStage(config, task, 1).map((agent) => agent.model),
      ['m0', 'm1'],
    );
    assert.deepEqual(agentConfigsAtStage(config, task, 2)[1], {
      name: 'y',
      model: 'm2',
      rolePrompt: 'r',
      trainable: true,
      learningRate: 0.5,
    });
    assert.deepEqual(
      agentConfigsAtStage(config, task, 9).map((agent) => agent.model),
      ['m0', 'm3'],
    );
  });
});
