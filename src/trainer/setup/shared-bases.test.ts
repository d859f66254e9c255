import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { loadCheckpoint, saveCheckpoint } from '../../io/checkpoint.js';
import { loadModel } from '../../models/load.js';
import { applyWeightsDtype } from '../../models/weights-dtype.js';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SharedBases } from '../../models/shared-bases.js';
import type { LoadedModel } from '../../models/load.js';
import { loraLayers, mergeLora, removeLora } from '../../nn/lora.js';
import type { TransformerLM } from '../../nn/transformer.js';
import { noGrad, tidy } from '../../tensor/index.js';
import { TeamtrError } from '../../util/errors.js';
import { loadAgentModel } from './build-team.js';
import { agentConfigSchema, type TrainConfigInput } from '../config/train-config.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { comparableRecords, directorySnapshot } from '../test-support/run-files.js';
import { openRun } from '../open-run.js';
import { train } from '../trainer.js';

/**
 * Agents on the same checkpoint whose base stays frozen (LoRA, or not trainable) share one copy
 * of its weights (models/shared-bases.ts), each in a module tree of its own; nothing one agent
 * does through its tree (training, merging, freeing) reaches another's outputs.
 */

let fixture: Awaited<ReturnType<typeof createTrainingFixture>>;
const ids = [1, 2, 3, 2, 1];

before(async () => {
  fixture = await createTrainingFixture();
});
after(() => rmSync(fixture.directory, { recursive: true, force: true }));

const base = () => path.join(fixture.directory, 'agent0');

function agentConfig(name: string, settings: Record<string, unknown> = {}) {
  return agentConfigSchema.parse({ name, model: base(), lora: { rank: 2 }, ...settings });
}

function logitsOf(model: TransformerLM): Float32Array {
  return noGrad(() =>
    tidy(() =>
      model.forward({ ids: Int32Array.from(ids), batch: 1, length: ids.length }).data.slice(),
    ),
  );
}

async function loraTeam(
  sharedBases: SharedBases,
  settings: Record<string, unknown> = {},
): Promise<LoadedModel[]> {
  const team: LoadedModel[] = [];
  for (const name of ['solver', 'critic', 'finalizer'])
    team.push((await loadAgentModel(agentConfig(name, settings), 7, sharedBases))!);
  return team;
}

/** Gives every adapter of `model` a non-zero B, as a training step would. */
function trainAdapters(model: TransformerLM): void {
  for (const adapter of loraLayers(model).values())
    adapter.loraB.data.forEach((_value, index, data) => (data[index] = 0.05 * ((index % 5) - 2)));
}

function baseTensors(model: TransformerLM) {
  return model
    .namedParameters()
    .filter(({ name }) => !/\.lora[AB]$/.test(name))
    .map(({ tensor }) => tensor);
}

describe('agents on one checkpoint share its frozen base', () => {
  for (const weightsDtype of ['float32', 'bfloat16'] as const) {
    test(`${weightsDtype}: three LoRA agents hold the same base tensors and their own adapters`, async () => {
      const sharedBases = new SharedBases();
      const [solver, critic, finalizer] = await loraTeam(sharedBases, { weightsDtype });
      const models = [solver!.model, critic!.model, finalizer!.model];
      assert.equal(sharedBases.size, 1);
      const [first, ...others] = models.map(baseTensors);
      for (const tensors of others)
        tensors.forEach((tensor, index) => assert.equal(tensor, first![index], 'same object'));
      assert.equal(models[0]!.tokenEmbedding.dtype, weightsDtype);
      assert.ok(
        first!.every((tensor) => !tensor.requiresGrad),
        'the shared base is frozen',
      );
      assert.notEqual(models[0]!.blocks[0], models[1]!.blocks[0], 'module trees of their own');
      const adapters = models.map((model) => [...loraLayers(model).values()][0]!.loraA);
      assert.equal(new Set(adapters).size, 3, 'adapters of their own');
      assert.notDeepEqual(adapters[0]!.data, adapters[1]!.data, 'seeded per agent');

      // Training one agent's adapters moves its outputs and nobody else's.
      const before = models.map(logitsOf);
      trainAdapters(models[0]!);
      assert.notDeepEqual(logitsOf(models[0]!), before[0]);
      assert.deepEqual(logitsOf(models[1]!), before[1]);
      assert.deepEqual(logitsOf(models[2]!), before[2]);
      for (const model of models) model.destroy();
    });
  }

  test('merging into the shared base is refused, naming the agents; destroying one frees nothing of the others', async () => {
    const sharedBases = new SharedBases();
    const team = await loraTeam(sharedBases);
    const models = team.map((loaded) => loaded.model);
    trainAdapters(models[1]!);
    const before = models.map(logitsOf);
    assert.throws(
      () => mergeLora(models[1]!),
      (error: unknown) =>
        error instanceof TeamtrError &&
        /shared by the agents critic, finalizer, solver/.test(error.message),
    );
    assert.throws(() => removeLora(models[1]!, { merge: true }), /cannot merge/);
    assert.throws(() => models[1]!.setTrainable(true), /shared by critic, finalizer, solver/);
    assert.deepEqual(models.map(logitsOf), before, 'the refusals wrote nothing');

    models[0]!.destroy();
    assert.ok(baseTensors(models[1]!).every((tensor) => !tensor.isDisposed));
    assert.deepEqual(logitsOf(models[1]!), before[1]);
    assert.deepEqual(logitsOf(models[2]!), before[2]);
    // A newcomer (a swap) shares what the remaining agents hold.
    const newcomer = (await loadAgentModel(agentConfig('solver'), 7, sharedBases))!.model;
    assert.equal(newcomer.tokenEmbedding, models[1]!.tokenEmbedding);
    assert.deepEqual(logitsOf(newcomer), before[0], 'the same seed gives the same adapters');

    // The last holder frees the base; the next load reads the checkpoint again.
    for (const model of [models[1]!, models[2]!, newcomer]) model.destroy();
    assert.ok(models[2]!.tokenEmbedding.isDisposed);
    assert.equal(sharedBases.size, 0);
    const reloaded = (await loadAgentModel(agentConfig('solver'), 7, sharedBases))!.model;
    assert.notEqual(reloaded.tokenEmbedding, models[2]!.tokenEmbedding);
    assert.deepEqual(logitsOf(reloaded), before[0]);
    reloaded.destroy();
  });

  test('a state dict writes the adapters, and only the values the shared base already holds', async () => {
    const sharedBases = new SharedBases();
    const [solver, critic] = (await loraTeam(sharedBases)).map((loaded) => loaded.model);
    trainAdapters(solver!);
    const criticLogits = logitsOf(critic!);
    critic!.loadStateDict(solver!.stateDict());
    assert.deepEqual(logitsOf(critic!), logitsOf(solver!), 'the adapters were loaded');
    const changed = solver!
      .stateDict()
      .map((entry) =>
        entry.name === 'tokenEmbedding' ? { ...entry, data: entry.data.map((x) => x + 1) } : entry,
      );
    assert.throws(
      () => critic!.loadStateDict(changed),
      /"tokenEmbedding" is a frozen weight shared by critic, finalizer, solver/,
    );
    assert.notDeepEqual(logitsOf(critic!), criticLogits);
    assert.deepEqual(logitsOf(critic!), logitsOf(solver!), 'the base is unchanged');
  });

  test('an agent that trains its full model loads its own copy; a frozen one shares', async () => {
    const sharedBases = new SharedBases();
    const lora = (await loadAgentModel(agentConfig('solver'), 7, sharedBases))!.model;
    const full = (await loadAgentModel(agentConfig('critic', { lora: undefined }), 7, sharedBases))!
      .model;
    const frozen = (await loadAgentModel(
      agentConfig('judge', { lora: undefined, trainable: false }),
      7,
      sharedBases,
    ))!.model;
    assert.notEqual(full.tokenEmbedding, lora.tokenEmbedding);
    assert.ok(full.tokenEmbedding.requiresGrad, 'the full model trains');
    assert.equal(frozen.tokenEmbedding, lora.tokenEmbedding);
    assert.equal(frozen.trainableParameters().length, 0);
    // Training the full model (its own tensors) leaves the shared base alone.
    const before = logitsOf(frozen);
    full.tokenEmbedding.data.fill(0.5);
    assert.deepEqual(logitsOf(frozen), before);
    for (const model of [lora, full, frozen]) model.destroy();
  });
});

describe('weightsDtype auto on a shared base', () => {
  test('a LoRA agent gets bfloat16 exactly when its checkpoint holds bfloat16 values', async () => {
    // The decision is made on the base alone: fresh adapters (float32, trainable) do not count.
    const rounded = path.join(fixture.directory, 'bfloat16-values');
    const loaded = await loadModel(base());
    applyWeightsDtype(loaded.model, 'bfloat16', { trainsFully: false, where: 'test' });
    await saveCheckpoint(rounded, {
      ...(await loadCheckpoint(base())),
      parameters: loaded.model.stateDict(),
    });
    loaded.model.destroy();
    const sharedBases = new SharedBases();
    const settings = { weightsDtype: 'auto' };
    const fromRounded = (await loadAgentModel(
      agentConfig('solver', { ...settings, model: rounded }),
      7,
      sharedBases,
    ))!.model;
    const fromFloat32 = (await loadAgentModel(agentConfig('critic', settings), 7, sharedBases))!
      .model;
    assert.equal(fromRounded.tokenEmbedding.dtype, 'bfloat16');
    assert.equal(fromFloat32.tokenEmbedding.dtype, 'float32');
    assert.equal(sharedBases.size, 2);
    fromRounded.destroy();
    fromFloat32.destroy();
  });
});

describe('a run whose LoRA agents share one base', () => {
  const sharedConfig = (overrides: Partial<TrainConfigInput> = {}): TrainConfigInput => ({
    ...fixture.config,
    agents: fixture.config.agents!.map((agent) => ({ ...agent, model: base(), lora: { rank: 2 } })),
    ...overrides,
  });

  test('shares it, and resumes from its checkpoint bit-identically, with or without base weights', async () => {
    for (const checkpointBaseWeights of [false, true]) {
      const whole = path.join(fixture.directory, `whole-${checkpointBaseWeights}`);
      await train({ config: sharedConfig({ checkpointBaseWeights }), runDirectory: whole });
      const opened = await openRun(whole);
      const [first, ...others] = opened.built.team.agents.map((agent) => agent.policy.model!);
      for (const model of others) assert.equal(model.tokenEmbedding, first!.tokenEmbedding);

      const resumed = path.join(fixture.directory, `resumed-${checkpointBaseWeights}`);
      const controller = new AbortController();
      const interrupted = await train({
        config: sharedConfig({ checkpointBaseWeights }),
        runDirectory: resumed,
        signal: controller.signal,
        onProgress: (event) => {
          if (event.kind === 'stage' && event.stage === 3) controller.abort();
        },
      });
      assert.equal(interrupted.stages, 3);
      const finished = await train({ config: {}, runDirectory: resumed, resume: true });
      assert.equal(finished.stages, 4);
      assert.deepEqual(comparableRecords(resumed), comparableRecords(whole));
      for (const unit of ['agent0', 'agent1', 'agent2']) {
        const unitDirectory = (run: string) => path.join(run, 'checkpoint', 'units', unit);
        assert.deepEqual(
          directorySnapshot(unitDirectory(resumed)),
          directorySnapshot(unitDirectory(whole)),
          `${unit}: its own adapters, optimizer state and references`,
        );
      }
    }
  });
});
