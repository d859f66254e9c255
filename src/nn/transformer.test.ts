import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { ShapeError } from '../util/errors.js';
import { memoryStatistics, noGrad, resetMemoryPeak, tidy } from '../tensor/index.js';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import type { ModelConfigInput } from './config.js';
import { generate } from './generate.js';
import { KeyValueCache } from './kv-cache.js';
import { TransformerLM } from './transformer.js';
import { sampleThenScore } from './test-support/sampled-and-scored.js';

const llamaConfig: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 23,
  hiddenSize: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediateSize: 48,
  maxPositions: 40,
  attentionBias: true,
  queryKeyNorm: true,
};
const gpt2Config: ModelConfigInput = {
  architecture: 'gpt2',
  vocabSize: 19,
  hiddenSize: 24,
  layers: 2,
  heads: 3,
  intermediateSize: 40,
  maxPositions: 40,
  tieEmbeddings: true,
};

function lastLogitsFullForward(model: TransformerLM, sequence: number[]): Float32Array {
  return noGrad(() =>
    tidy(() => {
      const logits = model.forward({
        ids: Int32Array.from(sequence),
        batch: 1,
        length: sequence.length,
      });
      const vocab = model.config.vocabSize;
      return logits.data.slice((sequence.length - 1) * vocab, sequence.length * vocab);
    }),
  );
}

describe('transformer language models', () => {
  for (const [name, config] of [
    ['llama (GQA, QKV bias, QK-norm)', llamaConfig],
    ['gpt2 (tied)', gpt2Config],
  ] as const) {
    test(`${name}: KV-cache decoding of a padded batch equals a full forward`, () => {
      forEachBackend((backendName) => {
        const model = new TransformerLM(config, new RandomGenerator(7));
        const sequences = [
          [1, 2, 3, 4, 5, 6, 7],
          [8, 9, 10, 3, 2],
          [11, 12, 13, 14, 15, 16],
        ];
        const promptLengths = [4, 2, 3];
        const promptLength = Math.max(...promptLengths);
        const steps = 3;
        const capacity = promptLength + steps;
        const batch = sequences.length;
        const keyMask = new Float32Array(batch * capacity).fill(1);
        const ids = new Int32Array(batch * promptLength);
        const positions = new Int32Array(batch * promptLength);
        sequences.forEach((sequence, row) => {
          const padding = promptLength - promptLengths[row]!;
          for (let slot = 0; slot < promptLength; slot++) {
            ids[row * promptLength + slot] = slot < padding ? 0 : sequence[slot - padding]!;
            positions[row * promptLength + slot] = slot < padding ? 0 : slot - padding;
            if (slot < padding) keyMask[row * capacity + slot] = 0;
          }
        });
        const cache = new KeyValueCache(model.config, batch, capacity);
        const vocab = model.config.vocabSize;
        noGrad(() => {
          let logits = model.forward({
            ids,
            batch,
            length: promptLength,
            positions,
            keyMask,
            cache,
          });
          for (let step = 0; step <= steps; step++) {
            sequences.forEach((sequence, row) => {
              const prefix = sequence.slice(0, promptLengths[row]! + step);
              const expected = lastLogitsFullForward(model, prefix);
              const lastRow = step === 0 ? row * promptLength + promptLength - 1 : row;
              const actual = logits.data.subarray(lastRow * vocab, (lastRow + 1) * vocab);
              for (let column = 0; column < vocab; column++) {
                assert.ok(
                  Math.abs(actual[column]! - expected[column]!) < 1e-5,
                  `${backendName} row ${row} step ${step}: ${actual[column]} vs ${expected[column]}`,
                );
              }
            });
            if (step === steps) break;
            const nextIds = Int32Array.from(
              sequences.map((sequence, row) => sequence[promptLengths[row]! + step]!),
            );
            const nextPositions = Int32Array.from(promptLengths.map((length) => length + step));
            logits = model.forward({
              ids: nextIds,
              batch,
              length: 1,
              positions: nextPositions,
              keyMask,
              cache,
            });
          }
        });
        cache.destroy();
        model.destroy();
      });
    });

    test(`${name}: log-probs recorded while sampling equal scoring (exactly on the TypeScript backend)`, () => {
      forEachBackend((backendName) => {
        // Natively, float32 products pick their kernel by row count (a decode step has a row per
        // sequence, scoring a row per position) and those sum in different orders; bfloat16
        // weights have one order (bfloat16.test.ts: exact there on every backend).
        const tolerance = backendName === 'typescript' ? 0 : 1e-5;
        const model = new TransformerLM(config, new RandomGenerator(11));
        const prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9]];
        const { generated, pairs } = sampleThenScore(model, {
          prompts,
          maxNewTokens: 8,
          random: new RandomGenerator(3),
          stopTokens: [5],
        });
        for (const { sampled, scored, sequence, position } of pairs)
          assert.ok(
            Math.abs(sampled - scored) <= tolerance,
            `${backendName} sequence ${sequence} token ${position}`,
          );
        generated.forEach((sequence) => {
          if (sequence.finishReason === 'stop') assert.equal(sequence.tokens.at(-1), 5);
        });
        model.destroy();
      });
    });
  }

  test('generation is deterministic from the seed and honours top-k = 1 (greedy)', () => {
    const model = new TransformerLM(llamaConfig, new RandomGenerator(1));
    const run = (seed: number, topK = 0) =>
      generate(model, {
        prompts: [[1, 2], [3]],
        maxNewTokens: 6,
        random: new RandomGenerator(seed),
        topK,
      }).map((s) => s.tokens);
    assert.deepEqual(run(9), run(9));
    assert.deepEqual(run(1, 1), run(2, 1));
    const greedy = generate(model, {
      prompts: [[1, 2]],
      maxNewTokens: 6,
      random: new RandomGenerator(5),
      temperature: 0,
    })[0]!.tokens;
    assert.deepEqual(run(3, 1)[0], greedy);
    model.destroy();
  });

  test('bad inputs get clear errors', () => {
    const model = new TransformerLM(llamaConfig, new RandomGenerator(1));
    assert.throws(
      () => model.forward({ ids: Int32Array.from([1, 2, 99]), batch: 1, length: 3 }),
      /outside the vocabulary/,
    );
    assert.throws(
      () => model.forward({ ids: Int32Array.from([1, 2]), batch: 1, length: 3 }),
      ShapeError,
    );
    assert.throws(
      () => generate(model, { prompts: [[]], maxNewTokens: 2, random: new RandomGenerator(1) }),
      /at least one token/,
    );
    assert.throws(
      () => generate(model, { prompts: [[1]], maxNewTokens: 100, random: new RandomGenerator(1) }),
      /maxPositions/,
    );
    assert.throws(
      () => new TransformerLM({ ...llamaConfig, kvHeads: 3 }, new RandomGenerator(1)),
      /multiple of kvHeads/,
    );
    assert.throws(
      () =>
        new TransformerLM(
          { ...llamaConfig, architecture: 'mamba' } as never,
          new RandomGenerator(1),
        ),
      /valid: "llama", "gpt2"/,
    );
    const other = new TransformerLM(
      { ...llamaConfig, hiddenSize: 16, heads: 2, kvHeads: 1 },
      new RandomGenerator(1),
    );
    assert.throws(
      () => model.loadStateDict(other.stateDict()),
      /has shape \[23, 16\], the model expects \[23, 32\]/,
    );
    assert.throws(
      () => model.loadStateDict(model.stateDict().slice(1)),
      /missing tensor "tokenEmbedding"/,
    );
    model.destroy();
    other.destroy();
  });

  test('state dict round trip reproduces the logits exactly', () => {
    const first = new TransformerLM(gpt2Config, new RandomGenerator(1));
    const second = new TransformerLM(gpt2Config, new RandomGenerator(2));
    second.loadStateDict(first.stateDict());
    assert.deepEqual(
      lastLogitsFullForward(first, [1, 2, 3]),
      lastLogitsFullForward(second, [1, 2, 3]),
    );
    first.destroy();
    second.destroy();
  });
});

describe('inference memory', () => {
  /** Peak bytes of pooled buffers in use during one forward pass of a model `layers` deep. */
  function peakForwardBytes(layers: number, gradients: boolean): number {
    const model = new TransformerLM(
      { ...llamaConfig, layers, hiddenSize: 64, intermediateSize: 128 },
      new RandomGenerator(3),
    );
    const [batch, length] = [2, 16];
    const ids = Int32Array.from({ length: batch * length }, (_, index) => index % 23);
    const run = (): number =>
      tidy(() => {
        resetMemoryPeak();
        const before = memoryStatistics().outstandingBytes;
        model.forward({ ids, batch, length });
        return memoryStatistics().peakOutstandingBytes - before;
      });
    const peak = gradients ? run() : noGrad(run);
    model.destroy();
    return peak;
  }

  test('a forward pass without gradients frees each layer once the next has its input', () => {
    const shallow = peakForwardBytes(2, false);
    const deep = peakForwardBytes(12, false);
    assert.ok(deep <= shallow * 1.05, `12 layers peak ${deep} bytes, 2 layers ${shallow}`);
  });

  test('with gradients every layer is kept for backward', () => {
    const shallow = peakForwardBytes(2, true);
    const deep = peakForwardBytes(12, true);
    assert.ok(deep > shallow * 3, `12 layers peak ${deep} bytes, 2 layers ${shallow}`);
  });

  test('freeing as it goes changes no number', () => {
    const model = new TransformerLM(llamaConfig, new RandomGenerator(4));
    const ids = Int32Array.from([1, 5, 2, 9, 3, 7, 4, 8]);
    const withoutGradients = noGrad(() =>
      tidy(() => model.forward({ ids, batch: 2, length: 4 }).data.slice()),
    );
    const withGradients = tidy(() => model.forward({ ids, batch: 2, length: 4 }).data.slice());
    assert.deepEqual(withoutGradients, withGradients);
    model.destroy();
  });
});
