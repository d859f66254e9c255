import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { noGrad, tidy } from '../tensor/index.js';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../util/random.js';
import type { ModelConfigInput } from './config.js';
import { KeyValueCache } from './kv-cache.js';
import { TransformerLM } from './transformer.js';
import { loraSampledAndScored, sampleThenScore } from './test-support/sampled-and-scored.js';

// Float32 weights at least 64 wide take matmulGemmOrder (tensor/ops/matmul-bfloat16.ts), the
// narrower key and value projections (36 wide) matmulFixedOrder: both kernels run. Widths off
// the 16-float vectors, so tails run too.
const llamaConfig: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 67,
  hiddenSize: 72,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediateSize: 136,
  maxPositions: 40,
  attentionBias: true,
};
const gpt2Config: ModelConfigInput = {
  architecture: 'gpt2',
  vocabSize: 71,
  hiddenSize: 80,
  layers: 2,
  heads: 4,
  intermediateSize: 100,
  maxPositions: 40,
  tieEmbeddings: true,
};

/** A frozen float32 model (a frozen agent, or the base under LoRA adapters). */
function frozenModel(config: ModelConfigInput, seed: number): TransformerLM {
  const model = new TransformerLM(config, new RandomGenerator(seed));
  model.setTrainable(false);
  return model;
}

// Prompts of several lengths (left padding up to 13 slots) and over 16 keys.
const prompts = [
  [1, 2],
  [3, 4, 5, 6],
  [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
];

describe('frozen float32 weights: one summation order at every row count', () => {
  for (const [name, config] of [
    ['llama', llamaConfig],
    ['gpt2 (tied head, learned positions)', gpt2Config],
  ] as const) {
    test(`${name}: log-probs recorded while sampling equal scoring exactly`, () => {
      // A decode step multiplies a row per sequence, scoring a row per position; frozen float32
      // weights sum each entry one way for both (matmulGemmOrder), on every backend.
      forEachBackend((backendName) => {
        const model = frozenModel(config, 11);
        const { pairs } = sampleThenScore(model, {
          prompts,
          maxNewTokens: 20,
          random: new RandomGenerator(3),
        });
        assert.ok(pairs.length >= 40, `${pairs.length} tokens`);
        for (const { sampled, scored, sequence, position } of pairs)
          assert.equal(sampled, scored, `${backendName} sequence ${sequence} token ${position}`);
        model.destroy();
      });
    });

    test(`${name}: decoding token by token gives the scoring pass's logits bit for bit`, () => {
      forEachBackend((backendName) => {
        const model = frozenModel(config, 12);
        // 20 positions: the full pass has more rows than any few-row kernel takes.
        const sequence = [1, 5, 9, 2, 30, 7, 3, 11, 4, 60, 8, 13, 21, 34, 55, 6, 10, 15, 28, 45];
        const vocab = model.config.vocabSize;
        const full = noGrad(() =>
          tidy(() =>
            model
              .forward({ ids: Int32Array.from(sequence), batch: 1, length: sequence.length })
              .data.slice(),
          ),
        );
        const cache = new KeyValueCache(model.config, 1, sequence.length);
        noGrad(() => {
          sequence.forEach((id, position) => {
            const row = tidy(() =>
              model.forward({ ids: Int32Array.of(id), batch: 1, length: 1, cache }).data.slice(),
            );
            assert.deepEqual(
              Array.from(row),
              Array.from(full.subarray(position * vocab, (position + 1) * vocab)),
              `${backendName} position ${position}`,
            );
          });
        });
        cache.destroy();
        model.destroy();
      });
    });
  }

  test('a LoRA agent on a float32 base: sampled log-probs equal scored ones exactly', () => {
    forEachBackend((backendName) => {
      const model = frozenModel(llamaConfig, 13);
      const pairs = loraSampledAndScored(model, prompts);
      assert.ok(pairs.length >= 40, `${pairs.length} tokens`);
      for (const { sampled, scored, sequence, position } of pairs)
        assert.equal(sampled, scored, `${backendName} ${sequence} ${position}`);
      model.destroy();
    });
  });
});
