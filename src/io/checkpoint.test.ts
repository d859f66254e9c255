import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, beforeEach, describe, test } from 'node:test';
import type { ModelConfigInput } from '../nn/config.js';
import { ConfigError, FileFormatError, ShapeError, TeamtrError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import {
  loadCheckpoint,
  loadCheckpointConfig,
  saveCheckpoint,
  type CheckpointInput,
} from './checkpoint.js';
import { compareShapes, expectShapes, TensorSetMismatchError } from './expect-shapes.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-checkpoint-'));
after(() => rmSync(root, { recursive: true, force: true }));

let work = '';
beforeEach(() => {
  work = mkdtempSync(path.join(root, 'case-'));
});

const config: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 16,
  hiddenSize: 8,
  layers: 1,
  heads: 2,
  intermediateSize: 12,
  maxPositions: 32,
};

function sampleCheckpoint(fill = 1): CheckpointInput {
  const random = new RandomGenerator(5);
  random.normal();
  return {
    config,
    parameters: [
      { name: 'embed.weight', shape: [16, 8], data: new Float32Array(128).fill(fill) },
      {
        name: 'norm.weight',
        shape: [8],
        data: Float32Array.from({ length: 8 }, (_, index) => index / 3),
      },
    ],
    optimizer: {
      state: [{ name: 'exp_avg.norm.weight', shape: [8], data: new Float32Array(8).fill(0.5) }],
      scalars: { step: 12, learningRate: 0.001, betas: [0.9, 0.999] },
    },
    extra: { random: random.getState(), stage: 3 },
    tokenizer: { type: 'teamtr-char', alphabet: 'ab' },
  };
}

describe('checkpoint round trip', () => {
  test('everything saved loads back; the config comes back resolved', async () => {
    const directory = path.join(work, 'ckpt');
    const saved = sampleCheckpoint();
    await saveCheckpoint(directory, saved);
    assert.deepEqual(readdirSync(directory).sort(), [
      'config.json',
      'extra.json',
      'model.safetensors',
      'optimizer.json',
      'optimizer.safetensors',
      'tokenizer.json',
    ]);
    const loaded = await loadCheckpoint(directory);
    assert.deepEqual(loaded.config, {
      ...config,
      kvHeads: 2,
      headDim: 4,
      ropeTheta: 10000,
      normEpsilon: 1e-5,
      attentionBias: false,
      queryKeyNorm: false,
      tieEmbeddings: false,
    });
    assert.deepEqual(loaded.parameters, saved.parameters);
    assert.deepEqual(loaded.optimizer, saved.optimizer);
    assert.deepEqual(loaded.extra, saved.extra);
    assert.deepEqual(loaded.tokenizer, saved.tokenizer);
    // The saved random state resumes the same stream.
    const original = new RandomGenerator(5);
    original.normal();
    const resumed = RandomGenerator.fromState(
      loaded.extra!.random as ReturnType<RandomGenerator['getState']>,
    );
    assert.equal(resumed.normal(), original.normal());
  });

  test('optional parts may be absent, and the optimizer can be skipped on load', async () => {
    const directory = path.join(work, 'ckpt');
    const { parameters } = sampleCheckpoint();
    await saveCheckpoint(directory, { config, parameters });
    const loaded = await loadCheckpoint(directory);
    assert.equal(loaded.optimizer, undefined);
    assert.equal(loaded.extra, undefined);
    assert.equal(loaded.tokenizer, undefined);
    await saveCheckpoint(directory, sampleCheckpoint());
    assert.equal((await loadCheckpoint(directory, { optimizer: false })).optimizer, undefined);
  });

  test('saving again replaces the checkpoint whole (no stale optimizer files)', async () => {
    const directory = path.join(work, 'ckpt');
    await saveCheckpoint(directory, sampleCheckpoint());
    await saveCheckpoint(directory, { config, parameters: sampleCheckpoint(2).parameters });
    const loaded = await loadCheckpoint(directory);
    assert.equal(loaded.optimizer, undefined);
    assert.equal(loaded.parameters[0].data[0], 2);
  });
});

describe('interrupted saves', () => {
  test('a save that fails half-way leaves the previous checkpoint intact and no temp directory', async () => {
    const directory = path.join(work, 'ckpt');
    await saveCheckpoint(directory, sampleCheckpoint(1));
    const broken = sampleCheckpoint(7);
    // The optimizer tensors are written after the model weights: this fails mid-save.
    broken.optimizer!.state = [{ name: 'bad', shape: [3], data: new Float32Array(2) }];
    await assert.rejects(saveCheckpoint(directory, broken), ShapeError);
    assert.deepEqual(readdirSync(work), ['ckpt']);
    const loaded = await loadCheckpoint(directory);
    assert.equal(loaded.parameters[0].data[0], 1);
    assert.equal(loaded.optimizer!.state[0].name, 'exp_avg.norm.weight');
  });

  test('an invalid config is refused before anything is written', async () => {
    const directory = path.join(work, 'ckpt');
    const bad = { ...sampleCheckpoint(), config: { ...config, heads: 3 } };
    await assert.rejects(saveCheckpoint(directory, bad), ConfigError);
    assert.deepEqual(readdirSync(work), []);
  });

  test('extra state that would not survive JSON is refused', async () => {
    const directory = path.join(work, 'ckpt');
    const bad = { ...sampleCheckpoint(), extra: { loss: NaN } };
    await assert.rejects(
      saveCheckpoint(directory, bad),
      /checkpoint extra does not survive JSON unchanged/,
    );
    assert.deepEqual(readdirSync(work), []);
  });
});

describe('loading damaged checkpoints', () => {
  async function savedDirectory(): Promise<string> {
    const directory = path.join(work, 'ckpt');
    await saveCheckpoint(directory, sampleCheckpoint());
    return directory;
  }

  test('a missing directory', async () => {
    await assert.rejects(
      loadCheckpoint(path.join(work, 'nope')),
      /nope: checkpoint directory not found/,
    );
  });

  test('a missing config.json or model.safetensors names the file', async () => {
    const directory = await savedDirectory();
    unlinkSync(path.join(directory, 'model.safetensors'));
    await assert.rejects(loadCheckpoint(directory), (error: unknown) => {
      return (
        error instanceof FileFormatError && error.file === path.join(directory, 'model.safetensors')
      );
    });
    unlinkSync(path.join(directory, 'config.json'));
    await assert.rejects(loadCheckpoint(directory), /config\.json: file not found/);
  });

  test('config.json that is not JSON', async () => {
    const directory = await savedDirectory();
    writeFileSync(path.join(directory, 'config.json'), '{"architecture": "llama",');
    await assert.rejects(loadCheckpoint(directory), /config\.json: not valid JSON/);
  });

  test('config.json that fails the schema names the file, the key and the valid choices', async () => {
    const directory = await savedDirectory();
    const configPath = path.join(directory, 'config.json');
    const saved = JSON.parse(readFileSync(configPath, 'utf8'));
    writeFileSync(configPath, JSON.stringify({ ...saved, architecture: 'mamba' }));
    await assert.rejects(loadCheckpointConfig(directory), (error: unknown) => {
      return (
        error instanceof ConfigError &&
        error.message.includes('config.json: architecture') &&
        error.message.includes('"mamba"') &&
        error.message.includes('"llama", "gpt2"')
      );
    });
    writeFileSync(configPath, JSON.stringify({ ...saved, hiddenSiz: 8 }));
    await assert.rejects(
      loadCheckpointConfig(directory),
      /unknown key "hiddenSiz" \(valid keys: architecture, vocabSize, hiddenSize/,
    );
    writeFileSync(configPath, '[1, 2]');
    await assert.rejects(loadCheckpointConfig(directory), /config\.json: expected a JSON object/);
  });

  test('optimizer.json missing next to optimizer.safetensors', async () => {
    const directory = await savedDirectory();
    unlinkSync(path.join(directory, 'optimizer.json'));
    await assert.rejects(
      loadCheckpoint(directory),
      /optimizer\.json: file not found, though optimizer\.safetensors is present; the checkpoint is incomplete/,
    );
    assert.equal((await loadCheckpoint(directory, { optimizer: false })).optimizer, undefined);
  });

  test('extra.json that is not an object', async () => {
    const directory = await savedDirectory();
    writeFileSync(path.join(directory, 'extra.json'), '3');
    await assert.rejects(
      loadCheckpoint(directory),
      /extra\.json: expected a JSON object, got a number/,
    );
  });

  test('damaged weights are a FileFormatError from the safetensors reader', async () => {
    const directory = await savedDirectory();
    const weightsPath = path.join(directory, 'model.safetensors');
    writeFileSync(weightsPath, readFileSync(weightsPath).subarray(0, 100));
    await assert.rejects(loadCheckpoint(directory), FileFormatError);
  });
});

describe('expectShapes', () => {
  const expected = new Map<string, number[]>([
    ['embed.weight', [16, 8]],
    ['norm.weight', [8]],
    ['head.weight', [16, 8]],
  ]);

  test('reports missing, unexpected and misshapen tensors by name', () => {
    const loaded = [
      { name: 'embed.weight', shape: [8, 16], data: new Float32Array(128) },
      { name: 'norm.weight', shape: [8], data: new Float32Array(8) },
      { name: 'lm_head.weight', shape: [16, 8], data: new Float32Array(128) },
    ];
    assert.deepEqual(compareShapes(loaded, expected), {
      missing: ['head.weight'],
      unexpected: ['lm_head.weight'],
      misshapen: [{ name: 'embed.weight', expected: [16, 8], actual: [8, 16] }],
    });
    assert.throws(
      () => expectShapes(loaded, expected, 'run/ckpt/model.safetensors'),
      (error: unknown) =>
        error instanceof TensorSetMismatchError &&
        error instanceof TeamtrError &&
        error.message.includes('run/ckpt/model.safetensors: tensors do not match the model') &&
        error.message.includes('missing (1): head.weight') &&
        error.message.includes('unexpected (1): lm_head.weight') &&
        error.message.includes('embed.weight is [8, 16], expected [16, 8]'),
    );
  });

  test('accepts a matching set, given as a list or as a map', () => {
    const asMap = new Map([...expected].map(([name, shape]) => [name, { shape }]));
    expectShapes(asMap, expected, 'x');
    expectShapes(
      [...expected].map(([name, shape]) => ({ name, shape })),
      expected,
      'x',
    );
    assert.throws(() => expectShapes(new Map(), expected, 'x'), /missing \(3\)/);
  });

  test('long lists are shortened', () => {
    const many = new Map(
      Array.from({ length: 25 }, (_, index) => [`w${index}`, [1]] as [string, number[]]),
    );
    assert.throws(
      () => expectShapes([], many, 'x'),
      /missing \(25\): w0, w1, .*w9, \.\.\. and 15 more/,
    );
  });
});
