import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../util/random.js';
import type { ModelConfigInput } from './config.js';
import { generate, type GenerateOptions } from './generate.js';
import { applyLora } from './lora.js';
import { planSharedPrefix, prefillPositions } from './shared-prefix.js';
import { sampleThenScore } from './test-support/sampled-and-scored.js';
import { TransformerLM } from './transformer.js';

// Widths off the kernels' 16-float vectors, so tails run too.
const config: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 37,
  hiddenSize: 40,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediateSize: 70,
  maxPositions: 64,
};

function tokens(random: RandomGenerator, length: number): number[] {
  return Array.from({ length }, () => 1 + random.nextInt(config.vocabSize! - 1));
}

/**
 * Groups as a team's turns make them: the same prompt several times, prompts that share a
 * prefix and then differ (later turns), a row that shares nothing, and rows of different
 * lengths so that shared prefixes sit at different slots of the padded batch.
 */
function groupedPrompts(seed: number): number[][] {
  const random = new RandomGenerator(seed);
  const problem = tokens(random, 17);
  const other = tokens(random, 11);
  return [
    problem,
    problem,
    [...problem, ...tokens(random, 6)],
    [...problem, ...tokens(random, 2)],
    other,
    [...other, ...tokens(random, 9)],
    tokens(random, 5),
    problem.slice(0, 12),
  ];
}

describe('planSharedPrefix', () => {
  test('identical prompts: one leader runs all but the last slot', () => {
    const prompt = [5, 6, 7, 8, 9];
    const plan = planSharedPrefix([prompt, prompt, prompt, prompt], 5)!;
    assert.equal(plan.start, 4);
    assert.deepEqual(plan.leaders, [{ row: 0, tokens: 4 }]);
    assert.deepEqual(
      plan.copies.map((copy) => [copy.row, copy.leader, copy.tokens]),
      [0, 1, 2, 3].map((row) => [row, 0, 4]),
    );
    assert.equal(prefillPositions(plan, 4, 5), 4 + 4);
  });

  test('nothing shared, or too little to pay for a second pass: no plan', () => {
    assert.equal(
      planSharedPrefix(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        3,
      ),
      null,
    );
    assert.equal(
      planSharedPrefix(
        [
          [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
          [1, 5, 6, 7, 8, 9, 10, 11, 12, 13],
        ],
        10,
      ),
      null,
    );
    assert.equal(planSharedPrefix([[1, 2, 3]], 3), null);
  });

  test('a padded row copies its prefix to its own slots; every plan costs less than none', () => {
    const prompts = groupedPrompts(3);
    const promptLength = Math.max(...prompts.map((prompt) => prompt.length));
    const plan = planSharedPrefix(prompts, promptLength)!;
    assert.ok(plan.start > 0 && plan.start < promptLength);
    for (const { row, leader, tokens: count } of plan.copies) {
      const source = prompts[plan.leaders[leader]!.row]!;
      assert.equal(count, plan.start - (promptLength - prompts[row]!.length));
      assert.deepEqual(prompts[row]!.slice(0, count), source.slice(0, count));
      assert.ok(count <= plan.leaders[leader]!.tokens);
    }
    assert.ok(prefillPositions(plan, prompts.length, promptLength) < prompts.length * promptLength);
  });
});

describe('generate with shared prefixes', () => {
  const run = (model: TransformerLM, prompts: number[][], extra: Partial<GenerateOptions>) =>
    generate(model, {
      prompts,
      maxNewTokens: 7,
      random: prompts.map((_prompt, row) => new RandomGenerator(`row-${row}`)),
      ...extra,
    });

  test('samples the tokens and log-probs of a plain prefill (bit for bit on bfloat16)', () => {
    forEachBackend((backendName) => {
      for (const storage of ['float32', 'bfloat16+lora'] as const) {
        const model = new TransformerLM(config, new RandomGenerator(11));
        if (storage !== 'float32') {
          model.setTrainable(false);
          model.storeFrozenWeightsAsBfloat16();
          const adapters = applyLora(model, {
            rank: 3,
            alpha: 6,
            targetModules: ['queryProjection', 'valueProjection'],
            random: new RandomGenerator(12),
          });
          const random = new RandomGenerator(13);
          for (const adapter of adapters.values())
            adapter.loraB.data.forEach((_value, index, data) => {
              data[index] = (random.nextDouble() - 0.5) * 0.2;
            });
        }
        const prompts = groupedPrompts(4);
        const plain = run(model, prompts, { sharePrefixes: false });
        // One pass, and chunks small enough that both passes take several.
        for (const prefillChunkPositions of [4096, 9]) {
          const shared = run(model, prompts, { prefillChunkPositions });
          shared.forEach((sequence, row) => {
            const label = `${backendName} ${storage} chunks ${prefillChunkPositions} row ${row}`;
            assert.deepEqual(sequence.tokens, plain[row]!.tokens, label);
            if (storage === 'float32') {
              // float32 products choose their summation order by shape (as chunked prefill).
              sequence.logProbs.forEach((logProb, position) =>
                assert.ok(Math.abs(logProb - plain[row]!.logProbs[position]!) < 1e-5, label),
              );
            } else assert.deepEqual(sequence.logProbs, plain[row]!.logProbs, label);
          });
        }
        model.destroy();
      }
    });
  });

  test('a LoRA agent on a bfloat16 base: sampled log-probs equal scored ones exactly', () => {
    forEachBackend((backendName) => {
      const model = new TransformerLM(config, new RandomGenerator(21));
      model.setTrainable(false);
      model.storeFrozenWeightsAsBfloat16();
      const adapters = applyLora(model, {
        rank: 2,
        alpha: 5,
        targetModules: ['queryProjection', 'valueProjection', 'downProjection'],
        random: new RandomGenerator(22),
      });
      for (const adapter of adapters.values()) adapter.loraB.data.fill(0.03);
      const prompts = groupedPrompts(5);
      assert.ok(planSharedPrefix(prompts, Math.max(...prompts.map((p) => p.length))));
      const { pairs } = sampleThenScore(model, {
        prompts,
        maxNewTokens: 6,
        random: new RandomGenerator(23),
      });
      for (const { sequence, position, sampled, scored } of pairs)
        assert.equal(sampled, scored, `${backendName} ${sequence} ${position}`);
      model.destroy();
    });
  });
});
