import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { grpoAdvantages, type PolicyLoss } from '../../../rl/index.js';
import { scoreCompletionsKeepingHidden } from '../../../nn/score.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import { noGrad, tidy } from '../../../tensor/index.js';
import { RandomGenerator } from '../../../util/random.js';
import { rollout } from '../../../team/rollout.js';
import { tinyTask, tinyTeam } from '../../../team/test-support/tiny-team.js';
import { activationBytes, gradientStep, microBatches } from './gradient-step.js';
import { collectUnitTokens, rowValues } from '../token-grid.js';
import { clippedSettings } from '../../test-support/trust-region-settings.js';

const settings = clippedSettings(1, 1);

/** A two-agent team's batch, the second agent's tokens and their advantages. */
async function secondAgentTokens() {
  const team = tinyTeam({ agents: 2, seed: 7, initStd: 6 });
  const task = tinyTask(2);
  const batch = await rollout({
    team,
    task,
    problems: task.split('train', { seed: 0, count: 3 }),
    groupSize: 4,
    seed: 'micro-batches',
  });
  const rewards = batch.trajectories.map((trajectory) => trajectory.answerText.length % 2);
  const advantages = grpoAdvantages({
    rewards,
    groupIds: batch.trajectories.map((trajectory) => trajectory.problemIndex),
  }).advantages;
  const tokens = collectUnitTokens(batch, [1]);
  return {
    model: team.agents[1]!.policy.model!,
    tokens,
    rowAdvantages: rowValues(tokens, advantages),
  };
}

/** Away from the sampling policy: the sampled log-probs are no longer the current ones. */
function moveParameters(model: TransformerLM): void {
  const random = new RandomGenerator(13);
  for (const { tensor } of model.trainableParameters())
    tensor.data.forEach((value, index) => (tensor.data[index] = value + 0.05 * random.normal()));
}

function gradientArrays(model: TransformerLM): Float32Array[] {
  return model.trainableParameters().map(({ tensor }) => Float32Array.from(tensor.grad!));
}

/**
 * Sums over micro-batches add in another order than one backward pass over all rows, and this
 * sharp tiny model amplifies last-bit differences of the forward: 1e-4 relative.
 */
function assertCloseGradients(actual: Float32Array[], expected: Float32Array[]): void {
  const largest = Math.max(...expected.flatMap((values) => [...values].map(Math.abs)));
  assert.ok(largest > 0, 'the step has a gradient');
  expected.forEach((values, index) =>
    values.forEach((value, position) => {
      const got = actual[index]![position]!;
      assert.ok(
        Math.abs(got - value) <= 1e-4 * Math.max(Math.abs(value), 1e-2 * largest),
        `parameter ${index}[${position}]: ${got} vs ${value}`,
      );
    }),
  );
}

describe('gradient step in micro-batches', () => {
  test('splitting the minibatch gives the whole pass’s loss and gradient', async () => {
    const { model, tokens, rowAdvantages } = await secondAgentTokens();
    const gradients = () =>
      model.trainableParameters().map(({ tensor }) => Float32Array.from(tensor.grad!));
    const whole = gradientStep(model, tokens, rowAdvantages, settings.policyLoss);
    const wholeGradients = gradients();
    model.zeroGrad();
    // A budget below one item's activations: every item is its own micro-batch.
    const budget = activationBytes(model, tokens.items.slice(0, 1)) - 1;
    assert.equal(microBatches(model, tokens.items, budget).length, tokens.items.length);
    const split = gradientStep(model, tokens, rowAdvantages, settings.policyLoss, {
      budgetBytes: budget,
    });
    const splitGradients = gradients();
    assert.ok(Math.abs(split!.loss - whole!.loss) <= 1e-6 * Math.max(1, Math.abs(whole!.loss)));
    assert.equal(split!.clipFraction, whole!.clipFraction);
    const largest = Math.max(...wholeGradients.flatMap((values) => [...values].map(Math.abs)));
    // Sums over micro-batches add in another order than one backward pass over all rows, and
    // this sharp tiny model amplifies last-bit differences of the forward: 1e-4 relative.
    wholeGradients.forEach((expected, index) =>
      expected.forEach((value, position) => {
        const actual = splitGradients[index]![position]!;
        assert.ok(
          Math.abs(actual - value) <= 1e-4 * Math.max(Math.abs(value), 1e-2 * largest),
          `parameter ${index}[${position}]: ${actual} vs ${value}`,
        );
      }),
    );
    assert.ok(largest > 0, 'the step has a gradient');
  });

  test('after the parameters moved, each micro-batch differentiates its own log-probs', async () => {
    const { model, tokens, rowAdvantages } = await secondAgentTokens();
    // Away from the sampling policy, the ratios differ from 1 and some are clipped.
    moveParameters(model);
    const whole = gradientStep(model, tokens, rowAdvantages, settings.policyLoss)!;
    const wholeGradients = gradientArrays(model);
    model.zeroGrad();
    const budget = activationBytes(model, tokens.items.slice(0, 1)) - 1;
    const split = gradientStep(model, tokens, rowAdvantages, settings.policyLoss, {
      budgetBytes: budget,
    })!;
    assert.ok(whole.clipFraction > 0, 'some ratios are clipped');
    assert.equal(split.clipFraction, whole.clipFraction);
    assert.ok(Math.abs(split.loss - whole.loss) <= 1e-6 * Math.max(1, Math.abs(whole.loss)));
    assertCloseGradients(gradientArrays(model), wholeGradients);
  });

  test('a loss coupling the micro-batches gets them run again with its complete gradient', async () => {
    const { model, tokens, rowAdvantages } = await secondAgentTokens();
    moveParameters(model);
    // d loss / d logProb(token) = mean log-prob of the batch: every token's gradient depends
    // on every micro-batch's forward pass.
    const coupledLoss: PolicyLoss = (input) => {
      const base = settings.policyLoss(input);
      let sum = 0;
      let count = 0;
      for (let index = 0; index < input.mask.length; index++) {
        if (Number(input.mask[index]) > 0) {
          sum += Number(input.logProbs[index]);
          count++;
        }
      }
      const mean = sum / count;
      return {
        ...base,
        loss: (sum * mean) / 2,
        gradLogProbs: Float32Array.from(input.mask, (value) => (Number(value) > 0 ? mean : 0)),
      };
    };
    const whole = gradientStep(model, tokens, rowAdvantages, coupledLoss)!;
    const wholeGradients = gradientArrays(model);
    model.zeroGrad();
    const budget = activationBytes(model, tokens.items.slice(0, 1)) - 1;
    const split = gradientStep(model, tokens, rowAdvantages, coupledLoss, {
      budgetBytes: budget,
    })!;
    assert.ok(Math.abs(split.loss - whole.loss) <= 1e-6 * Math.max(1, Math.abs(whole.loss)));
    assertCloseGradients(gradientArrays(model), wholeGradients);
  });

  test('a step refused after its micro-batches leaves the gradients as they were', async () => {
    const { model, tokens, rowAdvantages } = await secondAgentTokens();
    gradientStep(model, tokens, rowAdvantages, settings.policyLoss);
    const before = gradientArrays(model);
    const budget = activationBytes(model, tokens.items.slice(0, 3));
    assert.ok(microBatches(model, tokens.items, budget).length > 1);
    let seen: Float32Array | null = null;
    const refused = gradientStep(model, tokens, rowAdvantages, settings.policyLoss, {
      budgetBytes: budget,
      afterForward: (forward) => {
        seen = forward.hidden;
        return false;
      },
    });
    assert.equal(refused, null);
    assert.deepEqual(gradientArrays(model), before);
    // It saw every token's final hidden state, in the minibatch's scoring order.
    const hidden = noGrad(() =>
      tidy(() => scoreCompletionsKeepingHidden(model, tokens.items).hidden),
    );
    assert.equal(seen!.length, tokens.totalTokens * model.config.hiddenSize);
    seen!.forEach((value, index) =>
      assert.ok(Math.abs(value - hidden[index]!) <= 1e-5, `hidden[${index}]`),
    );
    // Refused on cleared gradients, it leaves none.
    model.zeroGrad();
    gradientStep(model, tokens, rowAdvantages, settings.policyLoss, {
      budgetBytes: budget,
      afterForward: () => false,
    });
    assert.ok(model.trainableParameters().every(({ tensor }) => tensor.grad === null));
  });

  test('micro-batches cover the items in order, each within the budget unless alone', async () => {
    const { model, tokens } = await secondAgentTokens();
    const budget = activationBytes(model, tokens.items.slice(0, 3));
    const parts = microBatches(model, tokens.items, budget);
    assert.ok(parts.length > 1);
    assert.deepEqual(
      parts.flatMap((part) => part.items),
      tokens.items,
    );
    let start = 0;
    for (const part of parts) {
      assert.equal(part.start, start);
      start += part.positions;
      assert.ok(part.items.length === 1 || activationBytes(model, part.items) <= budget);
    }
    assert.equal(start, tokens.totalTokens);
  });
});
