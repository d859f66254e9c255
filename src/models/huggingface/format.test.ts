import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { TensorSetMismatchError } from '../../io/expect-shapes.js';
import { generate } from '../../nn/generate.js';
import { noGrad, tidy } from '../../tensor/index.js';
import { HuggingFaceTokenizer } from '../../tokenizer/huggingface.js';
import { ConfigError, FileFormatError } from '../../util/errors.js';
import { RandomGenerator } from '../../util/random.js';
import { loadModel } from '../load.js';
import {
  fixtureConfig,
  fixtureModelTypes,
  fixtureTensors,
  writeHuggingFaceFixture,
  type FixtureModelType,
} from '../test-support/huggingface-fixture.js';
import { referenceGpt2, referenceLlamaFamily } from '../test-support/reference-forward.js';
import { UnsupportedArchitectureError } from './config.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-hf-format-'));
after(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const freshDirectory = () => path.join(root, `model-${counter++}`);
const sequence = [116, 257, 273, 270, 102, 32, 281, 278, 284, 32, 271, 63, 287, 288];

function logitsOf(
  model: Awaited<ReturnType<typeof loadModel>>['model'],
  ids: readonly number[],
): Float32Array {
  return noGrad(() =>
    tidy(() =>
      model.forward({ ids: Int32Array.from(ids), batch: 1, length: ids.length }).data.slice(),
    ),
  );
}

function referenceLogits(modelType: FixtureModelType, ids: readonly number[]): Float64Array {
  const config = fixtureConfig(modelType) as Record<string, number | boolean | string>;
  const weights = new Map(fixtureTensors(modelType).map((tensor) => [tensor.name, tensor]));
  return modelType === 'gpt2'
    ? referenceGpt2(config, weights, ids)
    : referenceLlamaFamily(config, weights, ids);
}

describe('Hugging Face model directories', () => {
  for (const modelType of fixtureModelTypes) {
    test(`${modelType}: logits match an independent float64 forward; sharded equals single-file`, async () => {
      const single = freshDirectory();
      writeHuggingFaceFixture(single, { modelType });
      const loaded = await loadModel(single);
      assert.ok(loaded.tokenizer instanceof HuggingFaceTokenizer);
      const actual = logitsOf(loaded.model, sequence);
      const expected = referenceLogits(modelType, sequence);
      assert.equal(actual.length, expected.length);
      let largestError = 0;
      let largestLogit = 0;
      for (let index = 0; index < actual.length; index++) {
        largestError = Math.max(largestError, Math.abs(actual[index]! - expected[index]!));
        largestLogit = Math.max(largestLogit, Math.abs(expected[index]!));
      }
      assert.ok(largestLogit > 0.5, `logits should not be trivially small (${largestLogit})`);
      assert.ok(
        largestError < 2e-4 * Math.max(1, largestLogit),
        `max |float32 − float64| = ${largestError}`,
      );

      const sharded = freshDirectory();
      writeHuggingFaceFixture(sharded, { modelType, shards: 3 });
      const shardedModel = await loadModel(sharded);
      assert.deepEqual(logitsOf(shardedModel.model, sequence), actual);
    });
  }

  test('the loaded config, tokenizer and generation defaults', async () => {
    const directory = freshDirectory();
    writeHuggingFaceFixture(directory, { modelType: 'qwen3' });
    const loaded = await loadModel(directory);
    assert.deepEqual(
      { ...loaded.model.config },
      {
        architecture: 'llama',
        vocabSize: 296,
        hiddenSize: 16,
        layers: 2,
        heads: 4,
        kvHeads: 2,
        headDim: 8,
        intermediateSize: 24,
        maxPositions: 64,
        ropeTheta: 1e6,
        normEpsilon: 1e-5,
        attentionBias: false,
        queryKeyNorm: true,
        tieEmbeddings: true,
      },
    );
    assert.deepEqual(loaded.generation, {
      stopTokenIds: [288, 286],
      temperature: 0.7,
      topK: 20,
      topP: 0.8,
      ignored: ['repetition_penalty'],
    });
    assert.equal(loaded.huggingFaceConfig?.model_type, 'qwen3');
    const mistral = freshDirectory();
    writeHuggingFaceFixture(mistral, { modelType: 'mistral' });
    assert.equal(
      (await loadModel(mistral)).model.config.maxPositions,
      48,
      'the sliding window bounds the sequence length',
    );
  });

  test('generation runs on a loaded checkpoint and stops at the chat end token', async () => {
    const directory = freshDirectory();
    writeHuggingFaceFixture(directory, { modelType: 'qwen2' });
    const { model, tokenizer } = await loadModel(directory);
    const stop = tokenizer.eosId!;
    const [first, second] = generate(model, {
      prompts: [sequence, sequence.slice(0, 5)],
      maxNewTokens: 12,
      random: new RandomGenerator(1),
      temperature: 0,
      stopTokens: [stop],
    });
    assert.ok(first!.tokens.length > 0 && second!.tokens.length > 0);
    // Greedy decoding continues the argmax of the full forward.
    const logits = logitsOf(model, sequence);
    const last = logits.subarray(logits.length - 296);
    assert.equal(first!.tokens[0], last.indexOf(Math.max(...last)));
  });

  describe('broken checkpoints get errors that name the problem', () => {
    test('an unsupported architecture names itself and the supported ones', async () => {
      const directory = freshDirectory();
      writeHuggingFaceFixture(directory, {
        modelType: 'llama',
        editConfig: (config) => ({ ...config, model_type: 'mamba' }),
      });
      await assert.rejects(
        loadModel(directory),
        (error: unknown) =>
          error instanceof UnsupportedArchitectureError &&
          error.message.includes(
            'model_type "mamba" is not supported (supported: llama, qwen2, qwen3, mistral, gpt2)',
          ),
      );
    });

    test('unsupported settings and malformed configs name the key', async () => {
      const cases: Array<
        [FixtureModelType, (config: Record<string, unknown>) => Record<string, unknown>, RegExp]
      > = [
        [
          'llama',
          (config) => ({ ...config, rope_scaling: { rope_type: 'llama3', factor: 8 } }),
          /rope_scaling: .*not supported/,
        ],
        [
          'llama',
          (config) => ({ ...config, hidden_act: 'gelu' }),
          /hidden_act: "gelu" is not supported/,
        ],
        ['llama', (config) => ({ ...config, hidden_size: 'big' }), /config\.json: hidden_size: /],
        [
          'llama',
          (config) =>
            Object.fromEntries(
              Object.entries(config).filter(([key]) => key !== 'num_hidden_layers'),
            ),
          /num_hidden_layers/,
        ],
        [
          'gpt2',
          (config) => ({ ...config, activation_function: 'relu' }),
          /activation_function: "relu" is not supported/,
        ],
      ];
      const plainRope = freshDirectory();
      writeHuggingFaceFixture(plainRope, {
        modelType: 'llama',
        editConfig: (config) => ({ ...config, rope_scaling: { rope_type: 'default' } }),
      });
      await loadModel(plainRope);
      for (const [modelType, editConfig, pattern] of cases) {
        const directory = freshDirectory();
        writeHuggingFaceFixture(directory, { modelType, editConfig });
        await assert.rejects(
          loadModel(directory),
          (error: unknown) => error instanceof ConfigError && pattern.test(error.message),
          pattern.source,
        );
      }
    });

    test('missing, extra and misshapen tensors are all named', async () => {
      const directory = freshDirectory();
      writeHuggingFaceFixture(directory, {
        modelType: 'llama',
        editTensors: (tensors) => [
          ...tensors
            .filter((tensor) => tensor.name !== 'model.layers.1.mlp.up_proj.weight')
            .map((tensor) =>
              tensor.name === 'model.norm.weight' ? { ...tensor, shape: [4, 4] } : tensor,
            ),
          { name: 'model.layers.0.mlp.extra.weight', shape: [2], data: new Float32Array(2) },
        ],
      });
      await assert.rejects(loadModel(directory), (error: unknown) => {
        if (!(error instanceof TensorSetMismatchError)) return false;
        assert.deepEqual(error.comparison.missing, ['model.layers.1.mlp.up_proj.weight']);
        assert.deepEqual(error.comparison.unexpected, ['model.layers.0.mlp.extra.weight']);
        assert.deepEqual(error.comparison.misshapen, [
          { name: 'model.norm.weight', expected: [16], actual: [4, 4] },
        ]);
        return true;
      });
    });

    test('an untied model needs lm_head; buffers and a tied lm_head are skipped', async () => {
      const untied = freshDirectory();
      writeHuggingFaceFixture(untied, {
        modelType: 'mistral',
        editTensors: (tensors) => tensors.filter((tensor) => tensor.name !== 'lm_head.weight'),
      });
      await assert.rejects(loadModel(untied), /missing \(1\): lm_head\.weight/);
      const withBuffers = freshDirectory();
      writeHuggingFaceFixture(withBuffers, {
        modelType: 'gpt2',
        editTensors: (tensors) => [
          ...tensors,
          { name: 'transformer.h.0.attn.bias', shape: [1], data: new Float32Array(1) },
          { name: 'lm_head.weight', shape: [296, 16], data: new Float32Array(296 * 16) },
        ],
      });
      await loadModel(withBuffers);
    });

    test('missing files: weights, shards, tokenizer', async () => {
      const noWeights = freshDirectory();
      writeHuggingFaceFixture(noWeights, { modelType: 'llama' });
      rmSync(path.join(noWeights, 'model.safetensors'));
      writeFileSync(path.join(noWeights, 'pytorch_model.bin'), '');
      await assert.rejects(
        loadModel(noWeights),
        (error: unknown) =>
          error instanceof FileFormatError &&
          /no model\.safetensors or model\.safetensors\.index\.json \(only PyTorch pickle weights/.test(
            error.message,
          ),
      );
      const missingShard = freshDirectory();
      writeHuggingFaceFixture(missingShard, { modelType: 'llama', shards: 2 });
      rmSync(path.join(missingShard, 'model-00002-of-00002.safetensors'));
      await assert.rejects(
        loadModel(missingShard),
        /lists shard model-00002-of-00002\.safetensors, which does not exist/,
      );
      const noTokenizer = freshDirectory();
      writeHuggingFaceFixture(noTokenizer, { modelType: 'llama' });
      rmSync(path.join(noTokenizer, 'tokenizer.json'));
      await assert.rejects(loadModel(noTokenizer), /no tokenizer\.json/);
    });
  });
});
