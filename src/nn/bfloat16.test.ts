import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { roundToBfloat16, widenBfloat16 } from '../backend/bfloat16.js';
import { crossEntropy, noGrad, tidy } from '../tensor/index.js';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { TeamtrError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import type { ModelConfigInput } from './config.js';
import { KeyValueCache } from './kv-cache.js';
import { applyLora, loraLayers, mergeLora } from './lora.js';
import { TransformerLM } from './transformer.js';
import { loraSampledAndScored, sampleThenScore } from './test-support/sampled-and-scored.js';

// Widths off the kernels' 16-float vectors and 4-column blocks, so tails run too.
const llamaConfig: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 37,
  hiddenSize: 40,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediateSize: 70,
  maxPositions: 40,
  attentionBias: true,
};
const gpt2Config: ModelConfigInput = {
  architecture: 'gpt2',
  vocabSize: 31,
  hiddenSize: 24,
  layers: 2,
  heads: 3,
  intermediateSize: 40,
  maxPositions: 40,
  tieEmbeddings: true,
};

/** A frozen model whose matrices are stored in bfloat16. */
function bfloat16Model(config: ModelConfigInput, seed: number): TransformerLM {
  const model = new TransformerLM(config, new RandomGenerator(seed));
  model.setTrainable(false);
  model.storeFrozenWeightsAsBfloat16();
  return model;
}

/** The same weights in float32, optionally rounded to bfloat16 values first. */
function float32Model(config: ModelConfigInput, seed: number, rounded: boolean): TransformerLM {
  const model = new TransformerLM(config, new RandomGenerator(seed));
  if (rounded) {
    for (const { tensor } of model.namedParameters()) {
      if (tensor.rank === 2) tensor.data.set(widenBfloat16(roundToBfloat16(tensor.data)));
    }
  }
  return model;
}

function logits(model: TransformerLM, ids: number[]): Float32Array {
  return noGrad(() =>
    tidy(() =>
      model.forward({ ids: Int32Array.from(ids), batch: 1, length: ids.length }).data.slice(),
    ),
  );
}

function maximumDifference(left: Float32Array, right: Float32Array): number {
  return left.reduce((worst, value, index) => Math.max(worst, Math.abs(value - right[index]!)), 0);
}

const sequence = [1, 5, 9, 2, 30, 7, 3, 11, 4];

describe('bfloat16 frozen weights', () => {
  for (const [name, config] of [
    ['llama', llamaConfig],
    ['gpt2 (tied head, learned positions)', gpt2Config],
  ] as const) {
    test(`${name}: the forward pass is float32's on the rounded weights, within 1e-5`, () => {
      forEachBackend((backendName) => {
        const half = bfloat16Model(config, 3);
        const rounded = float32Model(config, 3, true);
        const difference = maximumDifference(logits(half, sequence), logits(rounded, sequence));
        // Only the summation order differs from float32 on the same (rounded) values.
        assert.ok(difference < 1e-5, `${backendName}: ${difference}`);
        half.destroy();
        rounded.destroy();
      });
    });

    test(`${name}: logits within 2% (of their rms) of the unrounded float32 model`, () => {
      const half = bfloat16Model(config, 4);
      const single = float32Model(config, 4, false);
      const expected = logits(single, sequence);
      const scale = Math.sqrt(
        expected.reduce((sum, value) => sum + value * value, 0) / expected.length,
      );
      // Rounding each weight to 8 significant bits (relative error ≤ 2⁻⁹) moves these random
      // models' largest logit error to 0.8–0.9% of the logits' rms (measured); bound: 2%.
      const difference = maximumDifference(logits(half, sequence), expected);
      assert.ok(difference > 0, 'the rounding must show');
      assert.ok(difference < 2e-2 * scale, `${difference} vs rms ${scale}`);
      half.destroy();
      single.destroy();
    });

    test(`${name}: log-probs recorded while sampling equal scoring exactly`, () => {
      // One engine, one order: the bfloat16 product sums an entry the same way for any row
      // count, attention sums a query the same way in a decode step as in a block (left padding
      // skipped), and sampling reads the log-prob with scoring's own kernel. Prompts of several
      // lengths (left padding) and over 16 keys (whole vectors of keys).
      forEachBackend((backendName) => {
        const model = bfloat16Model(config, 11);
        // Left padding of 13 and 11 slots: not a multiple of the 4 keys attention sums together.
        const prompts = [
          [1, 2],
          [3, 4, 5, 6],
          [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
        ];
        const { pairs } = sampleThenScore(model, {
          prompts,
          maxNewTokens: 20,
          random: new RandomGenerator(3),
          stopTokens: [5],
        });
        for (const { sampled, scored, sequence, position } of pairs)
          assert.equal(sampled, scored, `${backendName} sequence ${sequence} token ${position}`);
        model.destroy();
      });
    });

    test(`${name}: decoding token by token gives the scoring pass's logits bit for bit`, () => {
      // The bfloat16 product sums each entry in one order whatever the row count (tested per
      // kernel in the backend suite) and attention one order per query, so a decode step (1 row)
      // and the scoring pass (all rows) agree exactly on every backend.
      forEachBackend(() => {
        const model = bfloat16Model(config, 12);
        const vocab = model.config.vocabSize;
        const full = logits(model, sequence);
        const cache = new KeyValueCache(model.config, 1, sequence.length);
        const prompt = 3;
        const decoded = noGrad(() => {
          const rows = [
            tidy(() =>
              model
                .forward({
                  ids: Int32Array.from(sequence.slice(0, prompt)),
                  batch: 1,
                  length: prompt,
                  cache,
                })
                .data.slice(),
            ),
          ];
          for (const id of sequence.slice(prompt)) {
            rows.push(
              tidy(() =>
                model.forward({ ids: Int32Array.of(id), batch: 1, length: 1, cache }).data.slice(),
              ),
            );
          }
          return rows;
        });
        const joined = new Float32Array(sequence.length * vocab);
        let offset = 0;
        for (const rows of decoded) {
          joined.set(rows, offset);
          offset += rows.length;
        }
        assert.deepEqual(Array.from(joined), Array.from(full));
        cache.destroy();
        model.destroy();
      });
    });
  }

  test('a LoRA adapter on a bfloat16 base trains, gradients reaching the first layer', () => {
    forEachBackend((backendName) => {
      const gradientsOf = (convert: boolean) => {
        const model = float32Model(llamaConfig, 5, true);
        applyLora(model, {
          rank: 4,
          alpha: 8,
          targetModules: ['queryProjection', 'downProjection'],
          random: new RandomGenerator(6),
        });
        // B starts at zero, so A's gradient would be zero: give B values.
        for (const adapter of loraLayers(model).values()) adapter.loraB.data.fill(0.05);
        if (convert) assert.ok(model.storeFrozenWeightsAsBfloat16() > 0);
        const ids = Int32Array.from(sequence);
        const targets = Int32Array.from([...sequence.slice(1), 0]);
        tidy(() =>
          crossEntropy(model.forward({ ids, batch: 1, length: ids.length }), targets).backward(),
        );
        const gradients = model
          .trainableParameters()
          .map(({ tensor }) => Float32Array.from(tensor.grad!));
        model.destroy();
        return gradients;
      };
      const half = gradientsOf(true);
      const rounded = gradientsOf(false);
      assert.equal(half.length, 8);
      half.forEach((gradient, index) => {
        const scale = Math.max(...rounded[index]!.map(Math.abs));
        assert.ok(scale > 0, `${backendName}: adapter ${index} gets a gradient`);
        assert.ok(
          maximumDifference(gradient, rounded[index]!) < 1e-4 * scale,
          `${backendName} ${index}`,
        );
      });
    });
  });

  test('a LoRA agent on a bfloat16 base: sampled log-probs equal scored ones exactly', () => {
    // The real team's path: adapters' products in one summation order too (fixedOrder).
    forEachBackend((backendName) => {
      const model = bfloat16Model(llamaConfig, 13);
      const pairs = loraSampledAndScored(model, [
        [1, 2],
        [3, 4, 5, 6],
        [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
      ]);
      for (const { sampled, scored, sequence, position } of pairs)
        assert.equal(sampled, scored, `${backendName} ${sequence} ${position}`);
      model.destroy();
    });
  });

  test('state dicts hold the bfloat16 values widened; loading rounds into bfloat16', () => {
    const half = bfloat16Model(llamaConfig, 8);
    const rounded = float32Model(llamaConfig, 8, true);
    const state = half.stateDict();
    assert.deepEqual(
      state.map((entry) => Array.from(entry.data)),
      rounded.stateDict().map((entry) => Array.from(entry.data)),
    );
    const other = bfloat16Model(llamaConfig, 9);
    other.loadStateDict(float32Model(llamaConfig, 8, false).stateDict());
    assert.deepEqual(Array.from(logits(other, sequence)), Array.from(logits(half, sequence)));
    for (const model of [half, rounded, other]) model.destroy();
  });

  test('training or merging into bfloat16 weights is refused with a clear error', () => {
    const model = bfloat16Model(llamaConfig, 10);
    assert.throws(() => model.setTrainable(true), TeamtrError);
    const adapted = float32Model(llamaConfig, 10, false);
    applyLora(adapted, {
      rank: 2,
      alpha: 4,
      targetModules: ['queryProjection'],
      random: new RandomGenerator(1),
    });
    adapted.storeFrozenWeightsAsBfloat16();
    const adapter = [...loraLayers(adapted).values()][0]!;
    assert.equal(adapter.loraA.dtype, 'float32');
    assert.equal(adapter.base.weight.dtype, 'bfloat16');
    assert.throws(
      () => adapter.loraA.storeAsBfloat16(),
      /requires grad cannot be stored in bfloat16/,
    );
    assert.throws(
      () => mergeLora(adapted),
      /cannot merge a LoRA adapter into a base weight stored in bfloat16/,
    );
    model.destroy();
    adapted.destroy();
  });
});
