import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { saveCheckpoint } from '../io/checkpoint.js';
import { readSafetensors, writeSafetensors } from '../io/safetensors.js';
import { applyLora } from '../nn/lora.js';
import { tinyLlamaConfig } from '../nn/test-support/tiny-llama.js';
import { TransformerLM } from '../nn/transformer.js';
import { CharTokenizer } from '../tokenizer/char.js';
import { FileFormatError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { loadModel } from './load.js';
import { attachLora, loraConfigSchema } from './lora-config.js';
import { loadPeftAdapter, peftFiles, savePeftAdapter } from './peft.js';
import { nonFiniteParameter } from './weight-checks.js';
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

describe('nonFiniteParameter', () => {
  /** A tiny Llama with rank-2 adapters, its frozen weights in bfloat16. */
  function bfloat16Model(): TransformerLM {
    const model = new TransformerLM(tinyLlamaConfig, new RandomGenerator(11));
    applyLora(model, {
      rank: 2,
      alpha: 4,
      targetModules: ['queryProjection'],
      random: new RandomGenerator(12),
    });
    model.storeFrozenWeightsAsBfloat16();
    return model;
  }

  test('finds NaN and ±Inf in a weight stored in bfloat16 on its bits, naming index and value', () => {
    const model = bfloat16Model();
    assert.equal(nonFiniteParameter(model), null);
    const { name, tensor } = model.namedParameters().find(({ tensor }) => tensor.bfloat16)!;
    // Reading `data` would widen the whole weight into a new float32 array.
    for (const { tensor: frozen } of model
      .namedParameters()
      .filter(({ tensor }) => tensor.bfloat16))
      Object.defineProperty(frozen, 'data', {
        get: () => assert.fail('a bfloat16 weight was widened to be checked'),
      });
    for (const [bits, value] of [
      [0xff80, -Infinity],
      [0x7f80, Infinity],
      [0x7fc1, Number.NaN],
    ] as const) {
      const saved = tensor.bfloat16![5]!;
      tensor.bfloat16![5] = bits;
      assert.deepEqual(nonFiniteParameter(model), { name, index: 5, value });
      tensor.bfloat16![5] = saved;
    }
    // The largest finite bfloat16 (exponent 0xfe) is finite.
    tensor.bfloat16![5] = 0x7f7f;
    assert.equal(nonFiniteParameter(model), null);
  });

  test("with 'trainable', reads only the parameters that train (an update changes no other)", () => {
    const model = bfloat16Model();
    const frozen = model.namedParameters().find(({ tensor }) => tensor.bfloat16)!;
    frozen.tensor.bfloat16![0] = 0x7fc0;
    assert.equal(nonFiniteParameter(model)?.name, frozen.name);
    assert.equal(nonFiniteParameter(model, 'trainable'), null);
    const trained = model.trainableParameters()[0]!;
    trained.tensor.data[1] = Infinity;
    assert.deepEqual(nonFiniteParameter(model, 'trainable'), {
      name: trained.name,
      index: 1,
      value: Infinity,
    });
    model.destroy();
  });
});
