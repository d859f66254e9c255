import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ScoringItem } from '../../../nn/score.js';
import { attachChangingLora } from '../../../nn/test-support/sampled-and-scored.js';
import {
  assertBitForBit,
  assertCloseGradients,
  sharedPrefixTestConfig,
} from '../../../nn/test-support/shared-prefix.js';
import { teamItems } from '../../../nn/test-support/team-items.js';
import { TransformerLM } from '../../../nn/transformer.js';
import { forEachBackend } from '../../../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../../../util/random.js';
import { activationBytes, gradientStep } from './gradient-step.js';
import {
  peakActivationBytes,
  planStepPasses,
  runStepPasses,
  type StepPasses,
} from './step-passes.js';
import { clippedSettings } from '../../test-support/trust-region-settings.js';
import type { UnitTokens } from '../token-grid.js';

function loraModel(bfloat16: boolean): TransformerLM {
  const model = new TransformerLM(sharedPrefixTestConfig, new RandomGenerator(3));
  attachChangingLora(model);
  if (bfloat16) model.storeFrozenWeightsAsBfloat16();
  return model;
}

/** One row per item, sampled log-probs near the model's so that some ratios clip. */
function unitTokens(items: ScoringItem[]): UnitTokens {
  const random = new RandomGenerator(17);
  const length = Math.max(...items.map((item) => item.completion.length));
  const mask = new Float32Array(items.length * length);
  const oldLogProbs = new Float32Array(items.length * length);
  const gridIndex: number[] = [];
  items.forEach((item, row) =>
    item.completion.forEach((_token, offset) => {
      mask[row * length + offset] = 1;
      oldLogProbs[row * length + offset] = -4 + 0.3 * random.normal();
      gridIndex.push(row * length + offset);
    }),
  );
  return {
    rows: items.length,
    length,
    rowTrajectories: items.map((_item, row) => row),
    mask,
    oldLogProbs,
    items,
    gridIndex: Int32Array.from(gridIndex),
    totalTokens: gridIndex.length,
    sampledHidden: items.map(() => null),
  };
}

interface StepRecord {
  result: { loss: number; clipFraction: number } | null;
  hidden: Float32Array;
  gradients: Float32Array[];
}

function step(model: TransformerLM, tokens: UnitTokens, budget: number, share: boolean) {
  model.zeroGrad();
  const random = new RandomGenerator(19);
  const advantages = Float64Array.from({ length: tokens.rows }, () => random.normal());
  let hidden = new Float32Array(0);
  const result = gradientStep(model, tokens, advantages, clippedSettings(1, 1).policyLoss, {
    budgetBytes: budget,
    sharePrefixes: share,
    afterForward: (forward) => {
      hidden = forward.hidden.slice();
      return true;
    },
  });
  const gradients = model
    .trainableParameters()
    .map(({ tensor }) => Float32Array.from(tensor.grad!));
  return { result, hidden, gradients } satisfies StepRecord;
}

/** Every part's log-probs placed at their items' flat positions (no backward asked). */
function logProbsOf(model: TransformerLM, items: ScoringItem[], passes: StepPasses) {
  const first = [0];
  for (const item of items) first.push(first.at(-1)! + item.completion.length);
  const logProbs = new Float32Array(first.at(-1)!);
  runStepPasses(model, items, passes, (part, scores) => {
    let offset = 0;
    for (const index of part)
      for (let k = 0; k < items[index]!.completion.length; k++)
        logProbs[first[index]! + k] = scores.logProbs[offset++]!;
    return new Float32Array(offset);
  });
  return logProbs;
}

describe('a gradient step sharing its items’ prompts', () => {
  for (const [name, bfloat16] of [
    ['LoRA on a float32 base', false],
    ['LoRA on a bfloat16 base', true],
  ] as const)
    test(`${name}: the plain step's hidden states, log-probs and loss bit for bit, its gradient within 1e-4`, () => {
      forEachBackend((backendName) => {
        const model = loraModel(bfloat16);
        const items = teamItems(5);
        const tokens = unitTokens(items);
        // Within the budget (one pass of prefixes, one of items), and micro-batches of about
        // three items: each shared prompt then runs once for parts of its group.
        for (const budget of [Infinity, activationBytes(model, items.slice(0, 3))]) {
          const label = `${backendName}, budget ${budget}`;
          const passes = planStepPasses(model, items, budget);
          const plainPasses = planStepPasses(model, items, budget, false);
          assert.ok(passes.plan, `${label}: the prompts are shared`);
          if (budget !== Infinity)
            assert.ok(
              passes.groups.some((group) => group.prefixes.length > 0 && group.parts.length > 1),
              `${label}: a prompt serves several micro-batches`,
            );
          assertBitForBit(
            logProbsOf(model, items, passes),
            logProbsOf(model, items, plainPasses),
            `${label}: log-probs`,
          );
          const plain = step(model, tokens, budget, false);
          const shared = step(model, tokens, budget, true);
          assertBitForBit(shared.hidden, plain.hidden, `${label}: hidden`);
          assert.deepEqual(shared.result, plain.result, label);
          assert.ok(plain.result!.clipFraction > 0, `${label}: some ratios clip`);
          assertCloseGradients(shared.gradients, plain.gradients, label);
        }
        model.destroy();
      });
    });

  test('a model trained in full in float32 keeps the plain passes', () => {
    const model = new TransformerLM(sharedPrefixTestConfig, new RandomGenerator(3));
    const items = teamItems(5);
    for (const budget of [Infinity, activationBytes(model, items.slice(0, 3))])
      assert.deepEqual(
        planStepPasses(model, items, budget),
        planStepPasses(model, items, budget, false),
      );
  });

  test('shared passes stay within the budget, or the plain passes’ peak if that is larger', () => {
    const model = loraModel(false);
    const items = teamItems(5);
    for (const share of [0.5, 0.25, 1e-6]) {
      const budget = activationBytes(model, items) * share;
      const passes = planStepPasses(model, items, budget);
      // Every item runs exactly once.
      const ran = passes.groups.flatMap((group) => group.parts.flat()).sort((a, b) => a - b);
      assert.deepEqual(
        ran,
        items.map((_item, index) => index),
      );
      if (share > 0.1) assert.ok(passes.plan, `${share}: shared`);
      const plain = planStepPasses(model, items, budget, false);
      assert.ok(
        peakActivationBytes(model, items, passes) <=
          Math.max(budget, peakActivationBytes(model, items, plain)),
        `${share}: within the bound`,
      );
    }
  });
});
