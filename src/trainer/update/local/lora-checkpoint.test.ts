import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadCheckpoint, saveCheckpoint } from '../../../io/checkpoint.js';
import { loadModel } from '../../../models/load.js';
import { attachLora, loraConfigSchema } from '../../../models/lora-config.js';
import { loadPeftAdapter } from '../../../models/peft.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import { noGrad, tidy } from '../../../tensor/index.js';
import { RandomGenerator } from '../../../util/random.js';
import type { TrainConfigInput } from '../../config/train-config.js';
import type { UpdateRecord } from '../../records.js';
import { createTrainingFixture } from '../../test-support/fixture.js';
import { comparableRecords, directorySnapshot, readRecords } from '../../test-support/run-files.js';
import { openRun } from '../../open-run.js';
import { train } from '../../trainer.js';

/**
 * Run checkpoints of LoRA agents hold their adapters in PEFT's layout and a reference to the
 * base model, not the base weights; resuming from them continues bit-identically.
 */

let fixture: Awaited<ReturnType<typeof createTrainingFixture>>;
const lora = { rank: 2 };

/** agent0 and agent2 train LoRA adapters (agent0 on a copy of its base model), agent1 its whole model. */
function loraConfig(overrides: Partial<TrainConfigInput> = {}): TrainConfigInput {
  const agents = fixture.config.agents!;
  return {
    ...fixture.config,
    agents: [
      { ...agents[0]!, model: path.join(fixture.directory, 'base0'), lora, learningRate: 1e-2 },
      agents[1]!,
      { ...agents[2]!, lora: { ...lora, targetModules: ['q_proj', 'v_proj', 'up_proj'] } },
    ],
    ...overrides,
  };
}

const unitDirectory = (run: string, unit: string) => path.join(run, 'checkpoint', 'units', unit);

function directoryBytes(directory: string): number {
  return Object.values(directorySnapshot(directory)).reduce(
    (total, base64) => total + Buffer.from(base64, 'base64').length,
    0,
  );
}

function logitsOf(model: TransformerLM, ids: readonly number[]): Float32Array {
  return noGrad(() =>
    tidy(() =>
      model.forward({ ids: Int32Array.from(ids), batch: 1, length: ids.length }).data.slice(),
    ),
  );
}

before(async () => {
  fixture = await createTrainingFixture();
  cpSync(path.join(fixture.directory, 'agent0'), path.join(fixture.directory, 'base0'), {
    recursive: true,
  });
});
after(() => rmSync(fixture.directory, { recursive: true, force: true }));

describe('checkpoints of LoRA agents', () => {
  const adaptersOnly = () => path.join(fixture.directory, 'adapters-only');
  const withBase = () => path.join(fixture.directory, 'with-base');

  test('hold the PEFT adapter, which on its base model reproduces the trained agent', async () => {
    await train({ config: loraConfig(), runDirectory: adaptersOnly() });
    await train({ config: loraConfig({ checkpointBaseWeights: true }), runDirectory: withBase() });
    assert.deepEqual(
      comparableRecords(withBase()),
      comparableRecords(adaptersOnly()),
      'saving the base weights changes nothing in training',
    );
    const updates = readRecords(adaptersOnly()).filter(
      (record): record is UpdateRecord => record.type === 'update',
    );
    for (const agent of ['agent0', 'agent1', 'agent2'])
      assert.ok(updates.some((update) => update.agent === agent && update.kl > 0));

    const agent0 = unitDirectory(adaptersOnly(), 'agent0');
    for (const file of ['adapter_config.json', 'adapter_model.safetensors'])
      assert.ok(existsSync(path.join(agent0, 'adapter', file)), file);
    assert.equal(existsSync(path.join(agent0, 'model.safetensors')), false, 'no base weights');
    const saved = await loadCheckpoint(agent0, { parameters: false });
    assert.ok(saved.optimizer!.state.length > 0);
    assert.ok(
      saved.optimizer!.state.every((entry) =>
        /\.lora[AB]\.(first|second)_moment$/.test(entry.name),
      ),
      'Adam moments of the adapters only',
    );
    assert.deepEqual(Object.keys(saved.extra!), ['lora']);
    const reference = saved.extra!.lora as { baseModel: string; baseFingerprint: string };
    assert.equal(reference.baseModel, path.join(fixture.directory, 'base0'));
    assert.match(reference.baseFingerprint, /^sha256:[0-9a-f]{64}$/);
    const adapterConfig = JSON.parse(
      readFileSync(path.join(agent0, 'adapter', 'adapter_config.json'), 'utf8'),
    ) as { base_model_name_or_path: string; target_modules: string[] };
    assert.equal(adapterConfig.base_model_name_or_path, reference.baseModel);
    assert.deepEqual(adapterConfig.target_modules, ['q_proj', 'v_proj']);
    // The fully trained agent keeps the full layout.
    const agent1 = unitDirectory(adaptersOnly(), 'agent1');
    assert.ok(existsSync(path.join(agent1, 'model.safetensors')));
    assert.equal(existsSync(path.join(agent1, 'adapter')), false);
    // With base weights the adapter is the same, bytes for bytes, and the unit is larger.
    const withBase0 = unitDirectory(withBase(), 'agent0');
    assert.deepEqual(
      readFileSync(path.join(withBase0, 'adapter', 'adapter_model.safetensors')),
      readFileSync(path.join(agent0, 'adapter', 'adapter_model.safetensors')),
    );
    assert.ok(directoryBytes(agent0) < directoryBytes(withBase0));

    // PEFT loader: base model + adapter = the trained agent (its full weights, saved in withBase).
    const fromAdapter = await loadModel(path.join(fixture.directory, 'base0'));
    const ids = fromAdapter.tokenizer.encode('ab\nA:ba\nB:a');
    const baseLogits = logitsOf(fromAdapter.model, ids);
    await loadPeftAdapter(fromAdapter.model, path.join(agent0, 'adapter'));
    const trained = await loadModel(path.join(fixture.directory, 'base0'));
    await attachLora(trained.model, loraConfigSchema.parse(lora), new RandomGenerator(0));
    trained.model.loadStateDict((await loadCheckpoint(withBase0)).parameters);
    const trainedLogits = logitsOf(trained.model, ids);
    assert.deepEqual(logitsOf(fromAdapter.model, ids), trainedLogits);
    assert.notDeepEqual(trainedLogits, baseLogits, 'the adapter was trained');
    // eval, serve, swap and export open a run the same way: they see the trained agent.
    const opened = await openRun(adaptersOnly());
    const openedAgent = opened.built.team.agents.find((agent) => agent.name === 'agent0')!;
    assert.deepEqual(logitsOf(openedAgent.policy.model!, ids), trainedLogits);
  });

  test('a run resumed from adapter checkpoints ends bit-identical to an uninterrupted one', async () => {
    const resumed = path.join(fixture.directory, 'resumed');
    const controller = new AbortController();
    const interrupted = await train({
      config: loraConfig(),
      runDirectory: resumed,
      signal: controller.signal,
      onProgress: (event) => {
        if (event.kind === 'stage' && event.stage === 3) controller.abort();
      },
    });
    assert.equal(interrupted.stages, 3);
    assert.equal(
      existsSync(path.join(unitDirectory(resumed, 'agent0'), 'model.safetensors')),
      false,
    );
    const finished = await train({ config: {}, runDirectory: resumed, resume: true });
    assert.equal(finished.stages, 4);
    assert.deepEqual(comparableRecords(resumed), comparableRecords(adaptersOnly()));
    for (const unit of ['agent0', 'agent1', 'agent2'])
      assert.deepEqual(
        directorySnapshot(unitDirectory(resumed, unit)),
        directorySnapshot(unitDirectory(adaptersOnly(), unit)),
        `${unit}: adapters or weights, optimizer state and references`,
      );
  });

  test('resuming onto a base model whose weights changed is refused', async () => {
    const run = path.join(fixture.directory, 'changed-base');
    await train({ config: loraConfig({ budget: { maxStages: 2 } }), runDirectory: run });
    const basePath = path.join(fixture.directory, 'base0');
    const original = await loadCheckpoint(basePath);
    const changed = original.parameters.map((entry, index) =>
      index === 0 ? { ...entry, data: entry.data.map((value) => value * 1.001) } : entry,
    );
    await saveCheckpoint(basePath, { ...original, parameters: changed });
    const bytesBefore = statSync(path.join(run, 'metrics.jsonl')).size;
    await assert.rejects(
      train({ config: {}, runDirectory: run, resume: true }),
      /adapters of "agent0" .* were trained on the base model at .*base0 with weights sha256:.*but the base model loaded now .* has weights sha256:.*restore the original base model/,
    );
    assert.equal(statSync(path.join(run, 'metrics.jsonl')).size, bytesBefore);
    await saveCheckpoint(basePath, original);
    const summary = await train({ config: {}, runDirectory: run, resume: true });
    assert.equal(summary.stages, 2);
  });
});
