import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tidy } from '../tensor/index.js';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../util/random.js';
import { scoreCompletionsKeepingHidden, type ScoringItem } from './score.js';
import {
  PrefixPass,
  planTrainingPrefixes,
  scoreAfterPrefixes,
  type TrainingPrefixPlan,
} from './shared-prefix-gradients.js';
import { attachChangingLora } from './test-support/sampled-and-scored.js';
import {
  assertBitForBit,
  assertCloseGradients,
  sharedPrefixTestConfig,
} from './test-support/shared-prefix.js';
import { teamItems } from './test-support/team-items.js';
import { TransformerLM } from './transformer.js';

/** LoRA agents on a float32 or a bfloat16 frozen base: the models real teams train. */
const loraKinds: Array<[name: string, build: () => TransformerLM]> = [
  ['LoRA on a float32 base', () => loraModel(false)],
  ['LoRA on a bfloat16 base', () => loraModel(true)],
];

function loraModel(bfloat16: boolean): TransformerLM {
  const built = new TransformerLM(sharedPrefixTestConfig, new RandomGenerator(3));
  attachChangingLora(built);
  if (bfloat16) built.storeFrozenWeightsAsBfloat16();
  return built;
}

interface Pass {
  logProbs: Float32Array;
  hidden: Float32Array;
  gradients: Float32Array[];
}

/** The log-probs' backward with fixed weights `seed`: a loss of every token. */
function weightsFor(count: number): Float32Array {
  const random = new RandomGenerator(21);
  return Float32Array.from({ length: count }, () => random.normal());
}

function gradients(model: TransformerLM): Float32Array[] {
  return model.trainableParameters().map(({ tensor }) => Float32Array.from(tensor.grad!));
}

function plainPass(model: TransformerLM, items: readonly ScoringItem[]): Pass {
  model.zeroGrad();
  return tidy(() => {
    const scores = scoreCompletionsKeepingHidden(model, items);
    const logProbs = scores.logProbs.data.slice();
    scores.logProbs.backward(weightsFor(logProbs.length));
    return { logProbs, hidden: scores.hidden, gradients: gradients(model) };
  });
}

/**
 * The items in `parts` (each a list of item indices, every prefix in one part's group): the
 * plan's prefixes once, each part's pass and backward, then the prefixes' backward.
 */
function sharedPass(
  model: TransformerLM,
  items: readonly ScoringItem[],
  plan: TrainingPrefixPlan,
  parts: number[][],
): Pass {
  model.zeroGrad();
  const total = items.reduce((sum, item) => sum + item.completion.length, 0);
  const weights = weightsFor(total);
  const starts = [0];
  for (const item of items) starts.push(starts.at(-1)! + item.completion.length);
  const logProbs = new Float32Array(total);
  const hidden = new Float32Array(total * model.config.hiddenSize);
  tidy(() => {
    const prefixes = new PrefixPass(
      model,
      plan,
      plan.prefixes.map((_prefix, index) => index),
    );
    for (const part of parts)
      tidy(() => {
        const flat = part.flatMap((item) =>
          Array.from({ length: items[item]!.completion.length }, (_unused, k) => starts[item]! + k),
        );
        const scores = scoreAfterPrefixes(
          model,
          part.map((item) => items[item]!),
          part.map((item) => plan.items[item]!),
          prefixes,
        );
        const size = model.config.hiddenSize;
        flat.forEach((position, offset) => {
          logProbs[position] = scores.logProbs.data[offset]!;
          hidden.set(scores.hidden.subarray(offset * size, (offset + 1) * size), position * size);
        });
        scores.logProbs.backward(Float32Array.from(flat, (position) => weights[position]!));
      });
    prefixes.backward();
  });
  return { logProbs, hidden, gradients: gradients(model) };
}

describe('a prefix pass with gradients and the items’ passes after it', () => {
  for (const [name, build] of loraKinds)
    test(`${name}: the plain pass's hidden states and log-probs bit for bit, its gradients within 1e-4`, () => {
      forEachBackend((backendName) => {
        const model = build();
        const items = teamItems(5);
        const plan = planTrainingPrefixes(model, items)!;
        assert.ok(plan.prefixes.length >= 2, 'both groups share their prompt');
        const plain = plainPass(model, items);
        const all = items.map((_item, index) => index);
        // One pass over every item, then every item a pass of its own, in another order: the
        // prefixes' key gradients gather over several passes.
        for (const parts of [[all], all.map((index) => [index]).reverse()]) {
          const label = `${backendName}, ${parts.length} passes`;
          const shared = sharedPass(model, items, plan, parts);
          assertBitForBit(shared.hidden, plain.hidden, `${label}: hidden`);
          assertBitForBit(shared.logProbs, plain.logProbs, `${label}: log-probs`);
          assertCloseGradients(shared.gradients, plain.gradients, label);
        }
        model.destroy();
      });
    });

  test('plans nothing for a model that does not sum in one order, or items that share little', () => {
    const full = new TransformerLM(sharedPrefixTestConfig, new RandomGenerator(3));
    assert.equal(planTrainingPrefixes(full, teamItems(5)), null);
    const lora = loraModel(false);
    const random = new RandomGenerator(8);
    const apart = [1, 2, 3].map((first) => ({
      context: [first, 9, 9],
      completion: [random.nextInt(50) + 1, 4],
    }));
    assert.equal(planTrainingPrefixes(lora, apart), null);
  });
});
