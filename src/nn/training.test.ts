import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { crossEntropy, memoryStatistics, tidy } from '../tensor/index.js';
import { checkGradients } from '../tensor/test-support/gradient-check.js';
import { AdamW } from '../optim/adamw.js';
import { TransformerLM } from './transformer.js';

describe('training a tiny language model', () => {
  test('whole-model parameter gradients match finite differences', () => {
    for (const architecture of ['llama', 'gpt2'] as const) {
      const model = new TransformerLM(
        {
          architecture,
          vocabSize: 11,
          hiddenSize: 16,
          layers: 2,
          heads: 2,
          kvHeads: architecture === 'llama' ? 1 : 2,
          intermediateSize: 24,
          maxPositions: 16,
          queryKeyNorm: architecture === 'llama',
        },
        new RandomGenerator(1),
      );
      const ids = Int32Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
      const targets = Int32Array.from([2, 3, 4, 5, 6, 7, 8, 9]);
      const random = new RandomGenerator(2);
      // Scaled up from the 0.02 init so the q/k gradients are large enough to be checked.
      for (const { tensor } of model.namedParameters())
        tensor.data.forEach((value, index) => (tensor.data[index] = value * 3));
      checkGradients({
        inputs: model.namedParameters().map((entry) => entry.tensor),
        fn: () => crossEntropy(model.forward({ ids, batch: 2, length: 4 }), targets),
        random,
        samples: 6,
        step: 5e-4,
        absoluteTolerance: 1e-3,
      });
      model.destroy();
    }
  });

  test('learns a repeating sequence (loss < 0.05) without growing memory', () => {
    const model = new TransformerLM(
      {
        architecture: 'llama',
        vocabSize: 8,
        hiddenSize: 32,
        layers: 2,
        heads: 2,
        intermediateSize: 64,
        maxPositions: 32,
      },
      new RandomGenerator(3),
    );
    const optimizer = new AdamW(model.trainableParameters(), {
      learningRate: 3e-3,
      beta1: 0.9,
      beta2: 0.99,
      epsilon: 1e-8,
      weightDecay: 0,
    });
    const pattern = [1, 2, 3, 4, 5, 6, 7];
    const batch = 4;
    const length = 16;
    const ids = new Int32Array(batch * length);
    const targets = new Int32Array(batch * length);
    for (let row = 0; row < batch; row++) {
      for (let t = 0; t < length; t++) {
        ids[row * length + t] = pattern[(row + t) % pattern.length]!;
        targets[row * length + t] = pattern[(row + t + 1) % pattern.length]!;
      }
    }
    let loss = Infinity;
    let pooledAfterWarmup = 0;
    for (let step = 0; step < 150 && loss > 0.05; step++) {
      loss = tidy(() => {
        const value = crossEntropy(model.forward({ ids, batch, length }), targets);
        value.backward();
        return value.item();
      });
      optimizer.update();
      optimizer.zeroGrad();
      if (step === 5) pooledAfterWarmup = memoryStatistics().pooledBytes;
      if (step > 5)
        assert.ok(
          memoryStatistics().pooledBytes <= pooledAfterWarmup * 1.01 + 1,
          'the buffer pool keeps growing',
        );
    }
    assert.ok(loss < 0.05, `final loss ${loss}`);
    model.destroy();
  });
});
