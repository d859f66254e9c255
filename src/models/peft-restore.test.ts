import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { loraLayers } from '../nn/lora.js';
import type { TransformerLM } from '../nn/transformer.js';
import { FileFormatError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { loadModel } from './load.js';
import { attachLora, loraConfigSchema, type LoraConfigInput } from './lora-config.js';
import { restorePeftAdapterValues } from './peft-restore.js';
import { savePeftAdapter } from './peft.js';
import {
  writeHuggingFaceFixture,
  type FixtureModelType,
} from './test-support/huggingface-fixture.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-peft-restore-'));
after(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const freshDirectory = () => path.join(root, `dir-${counter++}`);

/** A fixture model with adapters per `lora`, drawn from `seed` (A and B both non-zero, as after training). */
async function adaptedModel(
  modelDirectory: string,
  lora: LoraConfigInput,
  seed: string,
): Promise<TransformerLM> {
  const { model } = await loadModel(modelDirectory);
  await attachLora(model, loraConfigSchema.parse(lora), new RandomGenerator(seed));
  const random = new RandomGenerator(`${seed}/values`);
  for (const adapter of loraLayers(model).values())
    for (const tensor of [adapter.loraA, adapter.loraB])
      tensor.data.forEach((_value, index) => (tensor.data[index] = random.nextFloat() - 0.5));
  return model;
}

const adapterValues = (model: TransformerLM) =>
  [...loraLayers(model)].map(([modulePath, adapter]) => [
    modulePath,
    Array.from(adapter.loraA.data),
    Array.from(adapter.loraB.data),
  ]);

describe('restoring saved PEFT adapters into attached ones', () => {
  const cases: Array<{
    modelType: FixtureModelType;
    lora: LoraConfigInput & { targetModules: string[] };
  }> = [
    { modelType: 'llama', lora: { rank: 2, targetModules: ['q_proj', 'v_proj', 'down_proj'] } },
    // GPT-2's c_attn is saved fused (q, k, v stacked): restoring must split it again.
    { modelType: 'gpt2', lora: { rank: 2, alpha: 3, targetModules: ['c_attn', 'c_fc'] } },
    { modelType: 'gpt2', lora: { rank: 3, targetModules: ['queryProjection', 'valueProjection'] } },
  ];
  for (const { modelType, lora } of cases) {
    test(`${modelType} ${lora.targetModules.join(', ')}: the values come back bit for bit`, async () => {
      const modelDirectory = freshDirectory();
      writeHuggingFaceFixture(modelDirectory, { modelType });
      const trained = await adaptedModel(modelDirectory, lora, 'trained');
      const adapterDirectory = freshDirectory();
      await savePeftAdapter(trained, adapterDirectory);
      const resumed = await adaptedModel(modelDirectory, lora, 'other');
      assert.notDeepEqual(adapterValues(resumed), adapterValues(trained));
      const tensorsBefore = [...loraLayers(resumed).values()].map((adapter) => adapter.loraA);
      await restorePeftAdapterValues(resumed, adapterDirectory);
      assert.deepEqual(adapterValues(resumed), adapterValues(trained));
      assert.deepEqual(
        [...loraLayers(resumed).values()].map((adapter) => adapter.loraA),
        tensorsBefore,
        'the attached adapters are kept (an optimizer holds them), not replaced',
      );
    });
  }

  test('adapters that do not fit are refused, naming the module', async () => {
    const modelDirectory = freshDirectory();
    writeHuggingFaceFixture(modelDirectory, { modelType: 'llama' });
    const adapterDirectory = freshDirectory();
    await savePeftAdapter(
      await adaptedModel(modelDirectory, { rank: 2, targetModules: ['q_proj'] }, 'a'),
      adapterDirectory,
    );
    const refusals: Array<[LoraConfigInput, RegExp]> = [
      [{ rank: 4, targetModules: ['q_proj'] }, /self_attn\.q_proj: saved rank 2, alpha 4.*rank 4/],
      [{ rank: 2, alpha: 8, targetModules: ['q_proj'] }, /saved rank 2, alpha 4, but .* alpha 8/],
      [{ rank: 2, targetModules: ['q_proj', 'v_proj'] }, /v_proj: the adapter has no weights/],
    ];
    for (const [lora, message] of refusals) {
      const model = await adaptedModel(modelDirectory, lora, 'b');
      const before = adapterValues(model);
      await assert.rejects(restorePeftAdapterValues(model, adapterDirectory), (error: unknown) => {
        assert.ok(error instanceof FileFormatError);
        assert.match(error.message, message);
        return true;
      });
      assert.deepEqual(adapterValues(model), before, 'nothing is restored when anything fails');
    }
  });
});
