import assert from 'node:assert/strict';
import { test } from 'node:test';
import { noGrad, tidy } from '../tensor/index.js';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../util/random.js';
import type { ModelConfigInput } from './config.js';
import { applyLora } from './lora.js';
import { TransformerLM } from './transformer.js';

const configs: Record<string, ModelConfigInput> = {
  llama: {
    architecture: 'llama',
    vocabSize: 37,
    hiddenSize: 40,
    layers: 3,
    heads: 4,
    kvHeads: 2,
    intermediateSize: 70,
    maxPositions: 40,
  },
  gpt2: {
    architecture: 'gpt2',
    vocabSize: 31,
    hiddenSize: 24,
    layers: 2,
    heads: 3,
    intermediateSize: 40,
    maxPositions: 40,
  },
};

// Sampling runs the model without a graph (fused residual norms, one call per add + norm);
// a training pass records one (add, then the norm). An unchanged policy's ratio is exactly 1
// only if both give the same logits, bit for bit.
for (const [name, config] of Object.entries(configs)) {
  test(`${name}, LoRA on a bfloat16 base: logits with and without a recorded graph agree exactly`, () => {
    forEachBackend((backendName) => {
      const model = new TransformerLM(config, new RandomGenerator(31));
      model.setTrainable(false);
      model.storeFrozenWeightsAsBfloat16();
      const adapters = applyLora(model, {
        rank: 2,
        alpha: 4,
        targetModules: ['queryProjection', 'valueProjection'],
        random: new RandomGenerator(32),
      });
      for (const adapter of adapters.values()) adapter.loraB.data.fill(0.05);
      const random = new RandomGenerator(33);
      const [batch, length] = [2, 9];
      const ids = Int32Array.from({ length: batch * length }, () => random.nextInt(20));
      const run = () => tidy(() => model.forward({ ids, batch, length }).toArray());
      const recorded = run();
      const plain = noGrad(run);
      assert.deepEqual(plain, recorded, backendName);
      model.destroy();
    });
  });
}
