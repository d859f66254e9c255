import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AdamW } from '../optim/adamw.js';
import { crossEntropy, noGrad, tensor, tidy } from '../tensor/index.js';
import { checkGradients, randomLeaf } from '../tensor/test-support/gradient-check.js';
import { TeamtrError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import type { ModelConfigInput } from './config.js';
import { Linear } from './linear.js';
import {
  applyLora,
  attachLoraAt,
  LoraLinear,
  loraLayers,
  mergeLora,
  removeLora,
  unmergeLora,
} from './lora.js';
import { TransformerLM } from './transformer.js';

const llamaConfig: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 29,
  hiddenSize: 16,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediateSize: 24,
  maxPositions: 32,
  attentionBias: true,
};
const gpt2Config: ModelConfigInput = {
  architecture: 'gpt2',
  vocabSize: 29,
  hiddenSize: 12,
  layers: 2,
  heads: 3,
  intermediateSize: 20,
  maxPositions: 32,
  tieEmbeddings: true,
};
const ids = Int32Array.from([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]);

function logits(model: TransformerLM): Float32Array {
  return noGrad(() => tidy(() => model.forward({ ids, batch: 2, length: 6 }).data.slice()));
}

function randomizeB(adapters: Map<string, LoraLinear>, random: RandomGenerator): void {
  for (const adapter of adapters.values()) {
    const b = adapter.loraB.data;
    for (let index = 0; index < b.length; index++) b[index] = random.normal() * 0.2;
  }
}

function maxDifference(left: Float32Array, right: Float32Array): number {
  let largest = 0;
  for (let index = 0; index < left.length; index++)
    largest = Math.max(largest, Math.abs(left[index]! - right[index]!));
  return largest;
}

describe('LoRA', () => {
  test('a fresh adapter (B = 0) leaves the outputs exactly unchanged', () => {
    for (const config of [llamaConfig, gpt2Config]) {
      const model = new TransformerLM(config, new RandomGenerator(1));
      // Frozen first, as applyLora leaves the base: a frozen float32 weight sums in one fixed
      // order (Linear.forward), which differs from the trainable one's in the last bits.
      model.setTrainable(false);
      const before = logits(model);
      const targets =
        config.architecture === 'llama'
          ? ['queryProjection', 'valueProjection', 'gateProjection', 'downProjection']
          : ['queryProjection', 'upProjection', 'outputProjection'];
      const adapters = applyLora(model, {
        rank: 4,
        alpha: 8,
        targetModules: targets,
        random: new RandomGenerator(2),
      });
      assert.equal(adapters.size, targets.length * 2);
      assert.deepEqual(logits(model), before);
    }
  });

  test('merged equals unmerged, and unmerging restores the base weights', () => {
    const model = new TransformerLM(llamaConfig, new RandomGenerator(3));
    const baseWeight = model.blocks[0]!.attention.queryProjection;
    const original = (baseWeight as Linear).weight.data.slice();
    const adapters = applyLora(model, {
      rank: 3,
      alpha: 6,
      targetModules: ['queryProjection', 'keyProjection', 'upProjection'],
      random: new RandomGenerator(4),
    });
    randomizeB(adapters, new RandomGenerator(5));
    const unmerged = logits(model);
    assert.ok(
      maxDifference(unmerged, logits(new TransformerLM(llamaConfig, new RandomGenerator(3)))) >
        1e-3,
      'the adapters must change the outputs',
    );
    mergeLora(model);
    assert.ok(maxDifference(logits(model), unmerged) < 1e-4);
    assert.ok(maxDifference((baseWeight as Linear).weight.data, original) > 1e-3);
    unmergeLora(model);
    assert.ok(maxDifference((baseWeight as Linear).weight.data, original) < 1e-6);
    assert.ok(maxDifference(logits(model), unmerged) < 1e-5);
  });

  test('only the adapters train; the base weights stay bit-identical', () => {
    const model = new TransformerLM(llamaConfig, new RandomGenerator(6));
    const baseState = model.stateDict();
    applyLora(model, {
      rank: 2,
      alpha: 4,
      targetModules: ['queryProjection', 'valueProjection'],
      random: new RandomGenerator(7),
    });
    const trainable = model.trainableParameters().map((entry) => entry.name);
    assert.deepEqual(trainable, [
      'blocks.0.attention.queryProjection.loraA',
      'blocks.0.attention.queryProjection.loraB',
      'blocks.0.attention.valueProjection.loraA',
      'blocks.0.attention.valueProjection.loraB',
      'blocks.1.attention.queryProjection.loraA',
      'blocks.1.attention.queryProjection.loraB',
      'blocks.1.attention.valueProjection.loraA',
      'blocks.1.attention.valueProjection.loraB',
    ]);
    const optimizer = new AdamW(model.trainableParameters(), {
      learningRate: 1e-2,
      beta1: 0.9,
      beta2: 0.99,
      epsilon: 1e-8,
      weightDecay: 0,
    });
    const targets = Int32Array.from(ids, (id) => (id + 1) % 29);
    tidy(() => crossEntropy(model.forward({ ids, batch: 2, length: 6 }), targets).backward());
    optimizer.update();
    const after = new Map(model.stateDict().map((entry) => [entry.name, entry.data]));
    for (const entry of baseState) assert.deepEqual(after.get(entry.name), entry.data, entry.name);
    const b = after.get('blocks.0.attention.queryProjection.loraB')!;
    assert.ok(
      b.some((value) => value !== 0),
      'B must move after a step',
    );
  });

  test('the adapter forward has correct gradients (finite differences)', () => {
    const random = new RandomGenerator(8);
    const base = new Linear(5, 4, { bias: true, random });
    const adapter = new LoraLinear(base, { rank: 2, alpha: 3 }, random);
    const b = adapter.loraB.data;
    for (let index = 0; index < b.length; index++) b[index] = random.normal();
    const input = randomLeaf([3, 5], random);
    checkGradients({
      inputs: [input, adapter.loraA, adapter.loraB],
      fn: ([x]) => adapter.forward(x!),
      random,
    });
  });

  test('scaling is alpha/rank, or alpha/√rank with rsLoRA', () => {
    const random = new RandomGenerator(9);
    const base = new Linear(4, 4, { bias: false, random });
    assert.equal(new LoraLinear(base, { rank: 4, alpha: 8 }, random).scaling, 2);
    assert.equal(
      new LoraLinear(base, { rank: 4, alpha: 8, rankStabilized: true }, random).scaling,
      4,
    );
    const adapter = new LoraLinear(base, { rank: 1, alpha: 2 }, random);
    adapter.loraA.data.set([1, 0, 0, 0]);
    adapter.loraB.data.set([1, 0, 0, 0]);
    const input = tensor([1, 0, 0, 0], [1, 4]);
    const expected = Math.fround(noGrad(() => base.forward(input).data[0]!) + 2);
    assert.equal(
      noGrad(() => adapter.forward(input).data[0]!),
      expected,
    );
  });

  test('state dicts keep the base names and add loraA/loraB; removeLora restores a plain model', () => {
    const model = new TransformerLM(llamaConfig, new RandomGenerator(10));
    const baseNames = model.namedParameters().map((entry) => entry.name);
    const adapters = applyLora(model, {
      rank: 2,
      alpha: 2,
      targetModules: ['outputProjection'],
      random: new RandomGenerator(11),
    });
    randomizeB(adapters, new RandomGenerator(12));
    const names = model.namedParameters().map((entry) => entry.name);
    assert.deepEqual(
      names.filter((name) => !/lora[AB]$/.test(name)),
      baseNames,
    );
    assert.ok(names.includes('blocks.1.attention.outputProjection.loraA'));
    const adapted = logits(model);
    removeLora(model, { merge: true });
    assert.equal(loraLayers(model).size, 0);
    assert.deepEqual(
      model.namedParameters().map((entry) => entry.name),
      baseNames,
    );
    assert.ok(maxDifference(logits(model), adapted) < 1e-4);
  });

  test('unknown targets, bad ranks and double adapters are refused with the valid choices', () => {
    const model = new TransformerLM(gpt2Config, new RandomGenerator(13));
    assert.throws(
      () =>
        applyLora(model, {
          rank: 2,
          alpha: 2,
          targetModules: ['gateProjection'],
          random: new RandomGenerator(0),
        }),
      (error: unknown) =>
        error instanceof TeamtrError &&
        /unknown target module "gateProjection" \(this model's linear layers: downProjection, keyProjection, outputProjection, queryProjection, upProjection, valueProjection\)/.test(
          error.message,
        ),
    );
    assert.throws(
      () =>
        applyLora(model, {
          rank: 0,
          alpha: 2,
          targetModules: ['queryProjection'],
          random: new RandomGenerator(0),
        }),
      /rank must be a positive integer/,
    );
    attachLoraAt(
      model,
      'blocks.0.attention.queryProjection',
      { rank: 2, alpha: 2 },
      new RandomGenerator(0),
    );
    assert.throws(
      () =>
        attachLoraAt(
          model,
          'blocks.0.attention.queryProjection',
          { rank: 2, alpha: 2 },
          new RandomGenerator(0),
        ),
      /already has an adapter/,
    );
    assert.throws(
      () =>
        attachLoraAt(
          model,
          'blocks.9.attention.queryProjection',
          { rank: 2, alpha: 2 },
          new RandomGenerator(0),
        ),
      /no linear layer at blocks\.9/,
    );
  });
});
