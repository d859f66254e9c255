import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { grpoAdvantages } from '../rl/index.js';
import { rollout } from '../team/rollout.js';
import { tinyTask, tinyTeam } from '../team/test-support/tiny-team.js';
import { activationBytes, gradientStep, microBatches } from './gradient-step.js';
import { collectUnitTokens, rowValues } from './token-grid.js';
import { clippedSettings } from './test-support/trust-region-settings.js';

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
