import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { saveCheckpoint } from '../io/checkpoint.js';
import { readSafetensors, writeSafetensors } from '../io/safetensors.js';
import { TransformerLM } from '../nn/transformer.js';
import { CharTokenizer } from '../tokenizer/char.js';
import { FileFormatError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { loadModel } from './load.js';
import { attachLora, loraConfigSchema } from './lora-config.js';
import { loadPeftAdapter, peftFiles, savePeftAdapter } from './peft.js';
import { writeHuggingFaceFixture } from './test-support/huggingface-fixture.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-weight-checks-'));
after(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const fresh = () => path.join(root, `dir-${counter++}`);

/** A LoRA adapter trained on nothing (B random) saved in PEFT's layout next to its base. */
async function adapterFixture(): Promise<{ base: string; adapter: string }> {
  const base = fresh();
  writeHuggingFaceFixture(base, { modelType: 'qwen2' });
  const loaded = await loadModel(base);
  await attachLora(
    loaded.model,
    loraConfigSchema.parse({ rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] }),
    new RandomGenerator(4),
  );
  const adapter = fresh();
  await savePeftAdapter(loaded.model, adapter, { baseModel: base });
  loaded.model.destroy();
  return { base, adapter };
}

async function editAdapter(
  adapter: string,
  change: {
    config?: Record<string, unknown>;
    module?: string;
    tensor?: (data: Float32Array) => void;
  },
): Promise<void> {
  const configPath = path.join(adapter, peftFiles.config);
  const config = JSON.parse(readFileSync(configPath, 'utf8'));
  writeFileSync(configPath, JSON.stringify({ ...config, ...change.config }));
  if (!change.tensor) return;
  const weightsPath = path.join(adapter, peftFiles.weights);
  const tensors = [...(await readSafetensors(weightsPath)).tensors].map(([name, tensor]) => ({
    name,
    shape: tensor.shape,
    data: tensor.data,
  }));
  const loraB = tensors.find((entry) =>
    entry.name.endsWith(`${change.module ?? 'q_proj'}.lora_B.weight`),
  )!;
  change.tensor(loraB.data);
  await writeSafetensors(weightsPath, tensors);
}

describe('weights that load but cannot run are refused at load, naming the tensor', () => {
  test('a finalNorm of 3e38 (finite) overflows the forward pass and is refused', async () => {
    const directory = fresh();
    const tokenizer = new CharTokenizer({ alphabet: 'ab' });
    const model = new TransformerLM(
      {
        architecture: 'llama',
        vocabSize: tokenizer.vocabSize,
        hiddenSize: 8,
        layers: 1,
        heads: 2,
        intermediateSize: 16,
        maxPositions: 16,
      },
      new RandomGenerator(0),
    );
    const parameters = model.stateDict();
    parameters.find((entry) => entry.name === 'finalNorm.weight')!.data.fill(3e38);
    await saveCheckpoint(directory, {
      config: model.config,
      parameters,
      tokenizer: tokenizer.toJSON(),
    });
    model.destroy();
    await assert.rejects(
      loadModel(directory),
      (error: unknown) =>
        error instanceof FileFormatError &&
        error.file === directory &&
        /forward pass overflows float32 on a 4-token probe .* the largest weight is "finalNorm\.weight" \(3\.0000000054977558e\+38 at element 0\)/.test(
          error.message,
        ),
    );
  });

  test('a PEFT adapter holding NaN is refused, naming the LoRA tensor', async () => {
    const { base, adapter } = await adapterFixture();
    await editAdapter(adapter, { tensor: (data) => (data[2] = Number.NaN) });
    const loaded = await loadModel(base);
    await assert.rejects(
      loadPeftAdapter(loaded.model, adapter),
      new RegExp(
        `${adapter}: weight "blocks\\.0\\.attention\\.queryProjection\\.loraB" holds a non-finite value \\(NaN at element 2\\)`,
      ),
    );
  });

  test('lora_alpha 1e308 is refused for its scaling; a finite one that overflows by the forward pass', async () => {
    const { base, adapter } = await adapterFixture();
    await editAdapter(adapter, { config: { lora_alpha: 1e308 } });
    const loaded = await loadModel(base);
    await assert.rejects(
      loadPeftAdapter(loaded.model, adapter),
      /the LoRA adapter of "blocks\.0\.attention\.queryProjection" has a scaling of 2\.5e\+307 \(lora_alpha \/ r\), beyond float32's range; check lora_alpha in adapter_config\.json/,
    );
    // scaling 2.5e36 × B of 1e4 puts values past float32's 3.4e38 into the value projection.
    await editAdapter(adapter, {
      config: { lora_alpha: 1e37 },
      module: 'v_proj',
      tensor: (data) => data.fill(1e4),
    });
    const again = await loadModel(base);
    await assert.rejects(
      loadPeftAdapter(again.model, adapter),
      /forward pass overflows float32 .* the largest factor is the scaling 2\.5e\+36 of the LoRA adapter of "blocks\.0\.attention\.(query|value)Projection"/,
    );
  });

  test('a well-formed adapter still loads', async () => {
    const { base, adapter } = await adapterFixture();
    const loaded = await loadModel(base);
    const attached = await loadPeftAdapter(loaded.model, adapter);
    assert.ok(attached.size > 0);
  });
});
