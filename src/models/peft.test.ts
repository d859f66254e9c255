import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { readSafetensors, writeSafetensors } from '../io/safetensors.js';
import { generate } from '../nn/generate.js';
import { attachLoraAt, loraLayers } from '../nn/lora.js';
import type { TransformerLM } from '../nn/transformer.js';
import { AdamW } from '../optim/adamw.js';
import { crossEntropy, noGrad, tidy } from '../tensor/index.js';
import { ConfigError, FileFormatError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { chatPromptIds } from './chat.js';
import { loadModel } from './load.js';
import { attachLora, loraConfigSchema } from './lora-config.js';
import { loadPeftAdapter, savePeftAdapter } from './peft.js';
import { fixtureModelTypes, writeHuggingFaceFixture } from './test-support/huggingface-fixture.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-peft-'));
after(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const freshDirectory = () => path.join(root, `dir-${counter++}`);

function logitsOf(model: TransformerLM, ids: readonly number[]): Float32Array {
  return noGrad(() =>
    tidy(() =>
      model.forward({ ids: Int32Array.from(ids), batch: 1, length: ids.length }).data.slice(),
    ),
  );
}

const allTargets = {
  llama: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
  gpt2: ['c_attn', 'c_proj', 'c_fc'],
};

/** One LoRA step of next-token cross-entropy on `ids`. */
function trainStep(model: TransformerLM, ids: readonly number[]): void {
  const optimizer = new AdamW(model.trainableParameters(), {
    learningRate: 0.05,
    beta1: 0.9,
    beta2: 0.99,
    epsilon: 1e-8,
    weightDecay: 0,
  });
  const inputs = Int32Array.from(ids.slice(0, -1));
  const targets = Int32Array.from(ids.slice(1));
  tidy(() =>
    crossEntropy(
      model.forward({ ids: inputs, batch: 1, length: inputs.length }),
      targets,
    ).backward(),
  );
  optimizer.update();
}

describe('LoRA adapters in the PEFT layout', () => {
  for (const modelType of fixtureModelTypes) {
    test(`${modelType}: load → generate → LoRA step → save adapter → reload gives identical outputs`, async () => {
      const modelDirectory = freshDirectory();
      writeHuggingFaceFixture(modelDirectory, { modelType });
      const loaded = await loadModel(modelDirectory);
      const prompt = chatPromptIds(loaded.tokenizer, [
        { role: 'user', content: 'the sum of 12 and 3?' },
      ]);
      assert.equal(prompt[0], loaded.tokenizer.tokenToId('<|im_start|>'));
      const [sampled] = generate(loaded.model, {
        prompts: [prompt],
        maxNewTokens: 6,
        random: new RandomGenerator(3),
        temperature: 1,
      });
      const sequence = [...prompt, ...sampled!.tokens];
      // Frozen first, as attachLora leaves the base: a frozen float32 weight sums in one fixed
      // order (Linear.forward), which differs from the trainable one's in the last bits.
      loaded.model.setTrainable(false);
      const before = logitsOf(loaded.model, sequence);

      const targets = allTargets[modelType === 'gpt2' ? 'gpt2' : 'llama'];
      await attachLora(
        loaded.model,
        loraConfigSchema.parse({ rank: 4, alpha: 8, targetModules: targets }),
        new RandomGenerator(4),
      );
      assert.deepEqual(
        logitsOf(loaded.model, sequence),
        before,
        'fresh adapters (B = 0) equal the base model',
      );
      trainStep(loaded.model, sequence);
      const adapted = logitsOf(loaded.model, sequence);
      assert.ok(
        adapted.some((value, index) => Math.abs(value - before[index]!) > 1e-4),
        'the step must change the model',
      );

      const adapterDirectory = freshDirectory();
      await savePeftAdapter(loaded.model, adapterDirectory, { baseModel: modelDirectory });
      const reloaded = await loadModel(modelDirectory);
      await loadPeftAdapter(reloaded.model, adapterDirectory);
      const again = logitsOf(reloaded.model, sequence);
      if (modelType === 'gpt2') {
        // The fused c_attn adapter sums over the stacked rank: equal up to float32 rounding.
        assert.ok(again.every((value, index) => Math.abs(value - adapted[index]!) < 1e-5));
      } else {
        assert.deepEqual(again, adapted);
      }
      assert.ok(
        reloaded.model.trainableParameters().every((entry) => /lora[AB]$/.test(entry.name)),
        'only adapters train after loading',
      );
    });
  }

  test('the files use PEFT key names and config fields', async () => {
    const modelDirectory = freshDirectory();
    writeHuggingFaceFixture(modelDirectory, { modelType: 'qwen2' });
    const { model } = await loadModel(modelDirectory);
    await attachLora(
      model,
      loraConfigSchema.parse({ rank: 2, targetModules: ['q_proj', 'valueProjection'] }),
      new RandomGenerator(0),
    );
    const adapterDirectory = freshDirectory();
    await savePeftAdapter(model, adapterDirectory, { baseModel: 'Qwen/Qwen2.5-0.5B' });
    const config = JSON.parse(
      readFileSync(path.join(adapterDirectory, 'adapter_config.json'), 'utf8'),
    );
    assert.equal(config.peft_type, 'LORA');
    assert.equal(config.task_type, 'CAUSAL_LM');
    assert.equal(config.base_model_name_or_path, 'Qwen/Qwen2.5-0.5B');
    assert.deepEqual(
      [config.r, config.lora_alpha, config.rank_pattern, config.alpha_pattern],
      [2, 4, {}, {}],
    );
    assert.deepEqual(config.target_modules, ['q_proj', 'v_proj']);
    assert.equal(config.fan_in_fan_out, false);
    const { tensors } = await readSafetensors(
      path.join(adapterDirectory, 'adapter_model.safetensors'),
    );
    assert.deepEqual(
      [...tensors.keys()].sort(),
      [0, 1]
        .flatMap((layer) =>
          ['q_proj', 'v_proj'].flatMap((module) =>
            ['A', 'B'].map(
              (which) =>
                `base_model.model.model.layers.${layer}.self_attn.${module}.lora_${which}.weight`,
            ),
          ),
        )
        .sort(),
    );
    assert.deepEqual(
      tensors.get('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight')!.shape,
      [2, 16],
    );
    assert.deepEqual(
      tensors.get('base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight')!.shape,
      [8, 2],
    );
  });

  test('GPT-2: c_attn is saved fused with its stacked rank in rank_pattern; c_proj names are disambiguated', async () => {
    const modelDirectory = freshDirectory();
    writeHuggingFaceFixture(modelDirectory, { modelType: 'gpt2' });
    const { model } = await loadModel(modelDirectory);
    await attachLora(
      model,
      loraConfigSchema.parse({
        rank: 2,
        alpha: 4,
        targetModules: ['queryProjection', 'valueProjection', 'outputProjection'],
      }),
      new RandomGenerator(0),
    );
    const adapterDirectory = freshDirectory();
    await savePeftAdapter(model, adapterDirectory);
    const config = JSON.parse(
      readFileSync(path.join(adapterDirectory, 'adapter_config.json'), 'utf8'),
    );
    assert.deepEqual(config.target_modules, ['attn.c_proj', 'c_attn']);
    assert.equal(config.fan_in_fan_out, true);
    assert.deepEqual([config.r, config.lora_alpha], [2, 4]);
    assert.deepEqual(config.rank_pattern, { c_attn: 4 });
    assert.deepEqual(config.alpha_pattern, { c_attn: 8 });
    const { tensors } = await readSafetensors(
      path.join(adapterDirectory, 'adapter_model.safetensors'),
    );
    assert.deepEqual(
      tensors.get('base_model.model.transformer.h.0.attn.c_attn.lora_A.weight')!.shape,
      [4, 16],
    );
    assert.deepEqual(
      tensors.get('base_model.model.transformer.h.0.attn.c_attn.lora_B.weight')!.shape,
      [48, 4],
    );
  });

  test('modules of one kind with different ranks get exact per-module pattern keys', async () => {
    const modelDirectory = freshDirectory();
    writeHuggingFaceFixture(modelDirectory, { modelType: 'llama' });
    const { model } = await loadModel(modelDirectory);
    model.setTrainable(false);
    for (const [layer, rank] of [
      [0, 2],
      [1, 3],
    ] as const) {
      const adapter = attachLoraAt(
        model,
        `blocks.${layer}.attention.queryProjection`,
        { rank, alpha: 4 },
        new RandomGenerator(layer),
      );
      adapter.loraB.data.forEach((_value, index, data) => {
        data[index] = 0.1 * (index % 7) - 0.3;
      });
    }
    const adapterDirectory = freshDirectory();
    await savePeftAdapter(model, adapterDirectory);
    const config = JSON.parse(
      readFileSync(path.join(adapterDirectory, 'adapter_config.json'), 'utf8'),
    );
    assert.deepEqual(
      [config.r, config.lora_alpha, config.rank_pattern, config.alpha_pattern],
      [2, 4, { 'layers\\.1\\.self_attn\\.q_proj': 3 }, {}],
    );
    const reloaded = await loadModel(modelDirectory);
    const adapters = await loadPeftAdapter(reloaded.model, adapterDirectory);
    assert.deepEqual(
      [...adapters.values()].map((adapter) => adapter.rank),
      [2, 3],
    );
    const ids = [287, 116, 257, 273];
    assert.deepEqual(logitsOf(reloaded.model, ids), logitsOf(model, ids));
  });

  describe('malformed adapters get clear errors', () => {
    async function savedAdapter(): Promise<{ modelDirectory: string; adapterDirectory: string }> {
      const modelDirectory = freshDirectory();
      writeHuggingFaceFixture(modelDirectory, { modelType: 'llama' });
      const { model } = await loadModel(modelDirectory);
      await attachLora(
        model,
        loraConfigSchema.parse({ rank: 2, targetModules: ['q_proj'] }),
        new RandomGenerator(0),
      );
      const adapterDirectory = freshDirectory();
      await savePeftAdapter(model, adapterDirectory);
      return { modelDirectory, adapterDirectory };
    }

    test('config problems', async () => {
      const { modelDirectory, adapterDirectory } = await savedAdapter();
      const configPath = path.join(adapterDirectory, 'adapter_config.json');
      const original = JSON.parse(readFileSync(configPath, 'utf8'));
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ ...original, peft_type: 'PREFIX_TUNING' }, /peft_type: /],
        [{ ...original, use_dora: true }, /use_dora/],
        [{ ...original, r: 3 }, /lora_A has rank 2 but adapter_config\.json says 3/],
        [{ ...original, modules_to_save: ['lm_head'] }, /modules_to_save/],
      ];
      for (const [config, pattern] of cases) {
        writeFileSync(configPath, JSON.stringify(config));
        const { model } = await loadModel(modelDirectory);
        await assert.rejects(
          loadPeftAdapter(model, adapterDirectory),
          (error: unknown) =>
            (error instanceof ConfigError || error instanceof FileFormatError) &&
            pattern.test(error.message),
          pattern.source,
        );
        assert.equal(loraLayers(model).size, 0, 'a refused adapter leaves the model untouched');
      }
      const { model } = await loadModel(modelDirectory);
      await assert.rejects(
        loadPeftAdapter(model, modelDirectory),
        /not a PEFT adapter directory \(no adapter_config\.json\)/,
      );
    });

    test('tensor problems are each named', async () => {
      const { modelDirectory, adapterDirectory } = await savedAdapter();
      const weightsPath = path.join(adapterDirectory, 'adapter_model.safetensors');
      const { tensors } = await readSafetensors(weightsPath);
      const entries = [...tensors].map(([name, tensor]) => ({
        name,
        shape: tensor.shape,
        data: tensor.data,
      }));
      await writeSafetensors(weightsPath, [
        ...entries
          .filter((entry) => !entry.name.includes('layers.1.self_attn.q_proj.lora_B'))
          .map((entry) =>
            entry.name.includes('layers.0.self_attn.q_proj.lora_A')
              ? { ...entry, shape: [2, 8], data: entry.data.subarray(0, 16) }
              : entry,
          ),
        {
          name: 'base_model.model.model.layers.0.self_attn.rotary.lora_A.weight',
          shape: [2, 2],
          data: new Float32Array(4),
        },
        {
          name: 'base_model.model.lm_head.modules_to_save.weight',
          shape: [1],
          data: new Float32Array(1),
        },
      ]);
      const { model } = await loadModel(modelDirectory);
      await assert.rejects(loadPeftAdapter(model, adapterDirectory), (error: unknown) => {
        const message = (error as Error).message;
        return (
          error instanceof FileFormatError &&
          message.includes(
            'targets model.layers.0.self_attn.rotary, which this model does not have as a linear layer',
          ) &&
          message.includes(
            '"base_model.model.lm_head.modules_to_save.weight" is not a LoRA A/B weight',
          ) &&
          message.includes('model.layers.1.self_attn.q_proj has lora_B.weight missing')
        );
      });
      await writeSafetensors(
        weightsPath,
        entries.map((entry) =>
          entry.name.includes('layers.0.self_attn.q_proj.lora_A')
            ? { ...entry, shape: [2, 8], data: entry.data.subarray(0, 16) }
            : entry,
        ),
      );
      await assert.rejects(
        loadPeftAdapter(model, adapterDirectory),
        /model\.layers\.0\.self_attn\.q_proj: lora_A \[2, 8\] and lora_B \[16, 2\] do not fit the layer \(expected \[2, 16\] and \[16, 2\]\)/,
      );
    });

    test('target module names are checked against the model', async () => {
      const modelDirectory = freshDirectory();
      writeHuggingFaceFixture(modelDirectory, { modelType: 'gpt2' });
      const { model } = await loadModel(modelDirectory);
      await assert.rejects(
        attachLora(
          model,
          loraConfigSchema.parse({ targetModules: ['c_attn', 'gate_proj'] }),
          new RandomGenerator(0),
        ),
        (error: unknown) =>
          error instanceof ConfigError &&
          /lora\.targetModules\[1\]: "gate_proj" is not a linear layer of this gpt2 model \(valid: downProjection, keyProjection, outputProjection, queryProjection, upProjection, valueProjection; or c_attn, c_fc, c_proj\)/.test(
            error.message,
          ),
      );
    });
  });
});
