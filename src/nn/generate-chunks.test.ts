import assert from 'node:assert/strict';
import os from 'node:os';
import { describe, test } from 'node:test';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../util/random.js';
import { generate, type GenerateOptions, type GeneratedSequence } from './generate.js';
import { KeyValueCache } from './kv-cache.js';
import { applyLora } from './lora.js';
import { resolveModelConfig } from './config.js';
import { planSampling } from './sampling-plan.js';
import { TransformerLM } from './transformer.js';
import { tinyLlamaConfig } from './test-support/tiny-llama.js';

const config = tinyLlamaConfig;

/**
 * Eleven rows: prompts of different lengths (so a chunk needs another left padding than the
 * whole batch), and a group of four sharing a prompt (so a chunk plans its own shared prefix).
 */
function batchOf(random: RandomGenerator): number[][] {
  const prompt = (length: number) =>
    Array.from({ length }, () => 1 + random.nextInt(config.vocabSize - 1));
  const group = prompt(12);
  return [prompt(3), group, group, group, group, prompt(17), prompt(1), prompt(9), prompt(12)]
    .concat([prompt(5), prompt(2)])
    .map((tokens) => [...tokens]);
}

function withEnvironment<T>(variables: Record<string, string>, body: () => T): T {
  const previous = Object.keys(variables).map((name) => [name, process.env[name]] as const);
  Object.assign(process.env, variables);
  try {
    return body();
  } finally {
    for (const [name, value] of previous)
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  }
}

/**
 * Samples `prompts` with one generator per row; records every onToken call, by row, and the
 * rows in the order they were called (the chunks show in it).
 */
function sample(
  model: TransformerLM,
  prompts: number[][],
  extra: Partial<GenerateOptions>,
): { sequences: GeneratedSequence[]; streamed: string[][]; order: number[] } {
  const streamed: string[][] = prompts.map(() => []);
  const order: number[] = [];
  const sequences = generate(model, {
    prompts,
    maxNewTokens: 14,
    random: prompts.map((_prompt, row) => new RandomGenerator(`row-${row}`)),
    stopTokens: [3],
    keepHiddenStates: true,
    onToken: (row, token, logProb) => {
      streamed[row]!.push(`${token}:${logProb}`);
      order.push(row);
    },
    ...extra,
  });
  return { sequences, streamed, order };
}

/** Whether every row's tokens came before those of the next chunk of `rowsPerChunk` rows. */
function chunkMajor(order: readonly number[], rowsPerChunk: number): boolean {
  const chunks = order.map((row) => Math.floor(row / rowsPerChunk));
  return chunks.every((chunk, index) => index === 0 || chunk >= chunks[index - 1]!);
}

type Storage = 'frozen float32' | 'bfloat16 + LoRA' | 'trainable float32';

/** A model as an agent holds it: frozen float32, a LoRA agent on a bfloat16 base, or trained in full. */
function modelStoredAs(storage: Storage): TransformerLM {
  const model = new TransformerLM(config, new RandomGenerator(5));
  if (storage === 'trainable float32') return model;
  model.setTrainable(false);
  if (storage === 'frozen float32') return model;
  model.storeFrozenWeightsAsBfloat16();
  const adapters = applyLora(model, {
    rank: 3,
    alpha: 6,
    targetModules: ['queryProjection', 'valueProjection', 'downProjection'],
    random: new RandomGenerator(12),
  });
  for (const adapter of adapters.values()) adapter.loraB.data.fill(0.03);
  return model;
}

/** Tokens and stops equal; float32 values within `tolerance` (0: the same bits). */
function assertSameSamples(
  actual: ReturnType<typeof sample>,
  expected: ReturnType<typeof sample>,
  tolerance: number,
  label: string,
): void {
  if (tolerance === 0)
    return assert.deepEqual(
      { ...actual, order: undefined },
      { ...expected, order: undefined },
      label,
    );
  const near = (left: ArrayLike<number>, right: ArrayLike<number>) => {
    assert.equal(left.length, right.length, label);
    for (let index = 0; index < left.length; index++)
      assert.ok(Math.abs(left[index]! - right[index]!) <= tolerance, `${label} value ${index}`);
  };
  const tokensOf = (streamed: string[][]) =>
    streamed.map((row) => row.map((entry) => entry.split(':')[0]));
  assert.deepEqual(tokensOf(actual.streamed), tokensOf(expected.streamed), label);
  actual.sequences.forEach((sequence, row) => {
    const other = expected.sequences[row]!;
    assert.deepEqual(
      [sequence.tokens, sequence.finishReason],
      [other.tokens, other.finishReason],
      label,
    );
    near(sequence.logProbs, other.logProbs);
    near(sequence.hiddenStates!, other.hiddenStates!);
  });
}

describe('a batch sampled in chunks of rows', () => {
  test('gives the same tokens, log-probs, stops, hidden states and stream, bit for bit', () => {
    forEachBackend((backendName) => {
      for (const storage of ['frozen float32', 'bfloat16 + LoRA', 'trainable float32'] as const) {
        const model = modelStoredAs(storage);
        // Trainable float32 weights take the ordinary product, whose summation order follows
        // the row count (as for a chunked prefill or a shared prefix): the last bits may differ.
        const tolerance = storage === 'trainable float32' ? 1e-5 : 0;
        try {
          const prompts = batchOf(new RandomGenerator(6));
          for (const settings of [
            {},
            { topK: 5, temperature: 0.7 },
            { prefillChunkPositions: 7 },
          ]) {
            const whole = sample(model, prompts, { ...settings, rowsPerChunk: prompts.length });
            assert.ok(whole.sequences.some((sequence) => sequence.finishReason === 'stop'));
            assert.ok(!chunkMajor(whole.order, 1), 'one pass: every step draws from every row');
            for (const rowsPerChunk of [1, 3, 4, 10]) {
              const label = `${backendName} ${storage} ${JSON.stringify(settings)} ${rowsPerChunk} rows a chunk`;
              const chunked = sample(model, prompts, { ...settings, rowsPerChunk });
              assert.ok(chunkMajor(chunked.order, rowsPerChunk), `${label}: not chunked`);
              assertSameSamples(chunked, whole, tolerance, label);
            }
          }
        } finally {
          model.destroy();
        }
      }
    });
  });

  test('TEAMTR_SAMPLING_MEMORY_MIB sets the chunk: 1 MiB samples a row at a time, the same bits', () => {
    const model = modelStoredAs('frozen float32');
    try {
      const prompts = batchOf(new RandomGenerator(7));
      const whole = sample(model, prompts, {});
      const shape = {
        rows: prompts.length,
        promptLength: 17,
        maxNewTokens: 14,
        prefillChunkPositions: 4096,
        keepHiddenStates: true,
      };
      assert.equal(planSampling(model.config, shape).rowsPerChunk, prompts.length);
      const chunked = withEnvironment({ TEAMTR_SAMPLING_MEMORY_MIB: '1' }, () => {
        assert.equal(planSampling(model.config, shape).rowsPerChunk, 1);
        return sample(model, prompts, {});
      });
      assert.ok(chunkMajor(chunked.order, 1));
      assert.deepEqual({ ...chunked, order: [] }, { ...whole, order: [] });
    } finally {
      model.destroy();
    }
  });

  test('a batch whose cache is past the memory bound is sampled in chunks that fit it', () => {
    const model = modelStoredAs('bfloat16 + LoRA');
    try {
      const prompts = batchOf(new RandomGenerator(8));
      const whole = sample(model, prompts, {});
      // A bound that holds the cache of four rows: the batch's cache needs about three times it.
      const rowCache = 2 * config.layers * 2 * 8 * (17 + 14) * 4;
      const share = String((4 * rowCache) / os.totalmem());
      const chunked = withEnvironment({ TEAMTR_MEMORY_SHARE: share }, () => {
        const resolved = resolveModelConfig(config);
        assert.throws(
          () => new KeyValueCache(resolved, prompts.length, 31).destroy(),
          /TEAMTR_MEMORY_SHARE/,
        );
        return sample(model, prompts, {});
      });
      assert.deepEqual({ ...chunked, order: [] }, { ...whole, order: [] });
    } finally {
      model.destroy();
    }
  });

  test('rowsPerChunk is a positive integer and needs a generator per row', () => {
    const model = new TransformerLM(config, new RandomGenerator(5));
    try {
      const prompts = [[1, 2], [3]];
      for (const rowsPerChunk of [0, 1.5, Number.NaN])
        assert.throws(
          () => sample(model, prompts, { rowsPerChunk }),
          /rowsPerChunk must be a positive integer/,
        );
      assert.throws(
        () => sample(model, prompts, { rowsPerChunk: 1, random: new RandomGenerator(1) }),
        /rowsPerChunk needs one random generator per prompt/,
      );
      // One generator for the whole batch: one pass, whatever the budget.
      const shared = (environment: Record<string, string>) =>
        withEnvironment(environment, () =>
          sample(model, prompts, { random: new RandomGenerator(1) }),
        );
      assert.deepEqual(shared({ TEAMTR_SAMPLING_MEMORY_MIB: '1' }), shared({}));
    } finally {
      model.destroy();
    }
  });
});
