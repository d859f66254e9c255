import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../util/random.js';
import type { ModelConfigInput } from './config.js';
import { generate } from './generate.js';
import { completionHiddenStates } from './score.js';
import { completionHiddenStatesSharingPrefixes, sumsInOneOrder } from './shared-prefix-scoring.js';
import { attachChangingLora } from './test-support/sampled-and-scored.js';
import { sharedPrefixTestConfig } from './test-support/shared-prefix.js';
import { randomTokens as tokens, teamItems } from './test-support/team-items.js';
import { TransformerLM } from './transformer.js';

const gpt2Config: ModelConfigInput = {
  architecture: 'gpt2',
  vocabSize: 59,
  hiddenSize: 80,
  layers: 2,
  heads: 4,
  intermediateSize: 90,
  maxPositions: 96,
  tieEmbeddings: true,
};

type ModelKind = [name: string, build: () => TransformerLM];

function model(config: ModelConfigInput, prepare: (model: TransformerLM) => void): TransformerLM {
  const built = new TransformerLM(config, new RandomGenerator(3));
  prepare(built);
  return built;
}

// The model kinds whose sampled log-probs equal scored ones exactly (bfloat16, float32-fixed-order
// tests): frozen weights and LoRA agents on a float32 or bfloat16 base.
const exactKinds: ModelKind[] = [
  ['frozen llama', () => model(sharedPrefixTestConfig, (built) => built.setTrainable(false))],
  [
    'frozen gpt2 (learned positions, tied head)',
    () => model(gpt2Config, (built) => built.setTrainable(false)),
  ],
  ['LoRA on a float32 base', () => model(sharedPrefixTestConfig, attachChangingLora)],
  [
    'LoRA on a bfloat16 base',
    () =>
      model(sharedPrefixTestConfig, (built) => {
        attachChangingLora(built);
        built.storeFrozenWeightsAsBfloat16();
      }),
  ],
];

/** Counts the positions (batch × length) the model's forward passes run. */
function countRows(built: TransformerLM): { count: number } {
  const counter = { count: 0 };
  const forwardHidden = built.forwardHidden.bind(built);
  built.forwardHidden = (input) => {
    counter.count += input.batch * input.length;
    return forwardHidden(input);
  };
  return counter;
}

describe('completionHiddenStatesSharingPrefixes', () => {
  for (const [name, build] of exactKinds) {
    test(`${name}: the plain pass's hidden states bit for bit, in less work`, () => {
      forEachBackend((backendName) => {
        const built = build();
        const items = teamItems(5);
        const rows = countRows(built);
        const plain = completionHiddenStates(built, items);
        const plainRows = rows.count;
        // Small caches and chunks: several groups, and passes that start mid-sequence.
        for (const options of [
          {},
          { cacheBudgetBytes: 9 * 40 * 2 * 2 * 36 * 4, chunkPositions: 50 },
        ]) {
          rows.count = 0;
          const shared = completionHiddenStatesSharingPrefixes(built, items, options);
          assert.ok(rows.count < 0.8 * plainRows, `${rows.count} rows vs ${plainRows}`);
          assert.equal(shared.length, plain.length, backendName);
          for (let index = 0; index < plain.length; index++)
            if (shared[index] !== plain[index])
              assert.fail(
                `${backendName} ${JSON.stringify(options)}: entry ${index}: ${shared[index]} vs ${plain[index]}`,
              );
        }
        built.destroy();
      });
    });
  }

  test('trainable float32 matrices (kernels chosen by row count) take the plain pass', () => {
    forEachBackend(() => {
      const built = model(sharedPrefixTestConfig, () => {});
      assert.equal(sumsInOneOrder(built), false);
      const items = teamItems(6);
      const rows = countRows(built);
      const plain = completionHiddenStates(built, items);
      const plainRows = rows.count;
      const shared = completionHiddenStatesSharingPrefixes(built, items, { chunkPositions: 50 });
      assert.deepEqual(shared, plain);
      assert.equal(rows.count, 2 * plainRows);
      built.setTrainable(false);
      assert.equal(sumsInOneOrder(built), true);
    });
  });

  test('a context of one token, or items that share nothing, take the plain pass', () => {
    const built = model(sharedPrefixTestConfig, (prepared) => prepared.setTrainable(false));
    const random = new RandomGenerator(8);
    const items = [1, 2, 3].map((first) => ({ context: [first], completion: tokens(random, 5) }));
    assert.deepEqual(
      completionHiddenStatesSharingPrefixes(built, items),
      completionHiddenStates(built, items),
    );
  });

  test('an empty context is refused by name', () => {
    const built = model(sharedPrefixTestConfig, (prepared) => prepared.setTrainable(false));
    assert.throws(
      () => completionHiddenStatesSharingPrefixes(built, [{ context: [], completion: [1] }]),
      /item 0 has an empty context/,
    );
  });
});

describe('generate keepHiddenStates', () => {
  for (const [name, build] of exactKinds) {
    test(`${name}: the states that predicted each sampled token are scoring's, bit for bit`, () => {
      forEachBackend((backendName) => {
        const built = build();
        const random = new RandomGenerator(9);
        const prompts = [tokens(random, 12), tokens(random, 5), tokens(random, 12)];
        // Stop tokens end rows at different steps; their states stop with their tokens.
        const settings = { prompts, maxNewTokens: 12, stopTokens: [3, 4, 5, 6, 7] };
        const plain = generate(built, { ...settings, random: new RandomGenerator(10) });
        const kept = generate(built, {
          ...settings,
          random: new RandomGenerator(10),
          keepHiddenStates: true,
        });
        assert.ok(
          kept.some((sequence) => sequence.finishReason === 'stop'),
          backendName,
        );
        assert.deepEqual(
          kept.map(({ tokens: ids, logProbs }) => ({ ids, logProbs })),
          plain.map(({ tokens: ids, logProbs }) => ({ ids, logProbs })),
        );
        assert.ok(plain.every((sequence) => sequence.hiddenStates === undefined));
        kept.forEach((sequence, row) => {
          const scored = completionHiddenStates(built, [
            { context: prompts[row]!, completion: sequence.tokens },
          ]);
          assert.deepEqual(sequence.hiddenStates, scored, `${backendName}: row ${row}`);
        });
        built.destroy();
      });
    });
  }
});
