import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { broadcastToTokens, clippedSurrogate } from '../../rl/index.js';
import { scoreCompletions } from '../../nn/score.js';
import { TransformerLM } from '../../nn/transformer.js';
import { AdamW } from '../../optim/adamw.js';
import { clipGradientNorm } from '../../optim/clip.js';
import { tidy } from '../../tensor/index.js';
import { RandomGenerator } from '../../util/random.js';
import { collectUnitTokens, fromGrid, rowValues, toGrid } from './token-grid.js';
import { trustRegionUpdate } from './trust-region.js';
import { clippedSettings } from '../test-support/trust-region-settings.js';
import { oneAgentBatch } from '../test-support/one-agent-batch.js';

const settings = clippedSettings(1, 1);

/** The one trainable unit of these tests: `model` with a fresh AdamW. */
function soloUnit(model: TransformerLM, delta: number, learningRate: number) {
  return {
    name: 'solo',
    model,
    optimizer: new AdamW(model.trainableParameters()),
    agentIndices: [0],
    delta,
    learningRate,
  };
}

describe('trust-region update', () => {
  test('with one agent and a non-binding region it is exactly one PPO step', async () => {
    const { model, batch, advantages } = await oneAgentBatch();
    const twin = new TransformerLM(model.config, new RandomGenerator(0));
    twin.loadStateDict(model.stateDict());
    const adam = { learningRate: 1e-4, beta1: 0.9, beta2: 0.99, epsilon: 1e-8, weightDecay: 0 };
    const unit = {
      name: 'solo',
      model,
      optimizer: new AdamW(model.trainableParameters(), adam),
      agentIndices: [0],
      delta: 1e9,
      learningRate: 1e-4,
    };
    const trajectories = batch.trajectories.map((_trajectory, index) => index);
    const result = await trustRegionUpdate(
      {
        unit,
        batch,
        advantages,
        trajectories,
        settings,
      },
      new RandomGenerator(1),
    );
    assert.equal(result.stepsTaken, 1);
    assert.ok(result.kl > 0);
    // The same step by hand: PPO's clipped surrogate, its gradient, clipping, AdamW.
    const twinOptimizer = new AdamW(twin.trainableParameters(), adam);
    // Same minibatch order as the update (one minibatch, shuffled by its generator), so even the
    // floating-point summation order matches.
    const rows = new RandomGenerator(1).shuffle(
      batch.trajectories.map((_trajectory, index) => index),
    );
    const tokens = collectUnitTokens(batch, [0], rows);
    tidy(() => {
      const scores = scoreCompletions(twin, tokens.items);
      const surrogate = clippedSurrogate({
        logProbs: toGrid(tokens, scores.logProbs.data),
        oldLogProbs: tokens.oldLogProbs,
        advantages: broadcastToTokens({
          perTrajectory: rowValues(tokens, advantages),
          mask: tokens.mask,
          rows: tokens.rows,
        }),
        mask: tokens.mask,
        rows: tokens.rows,
        clipLow: 0.2,
        clipHigh: 0.2,
        aggregation: 'sequence-mean',
      });
      scores.logProbs.backward(fromGrid(tokens, surrogate.gradLogProbs));
    });
    const clipping = clipGradientNorm(twin.trainableParameters(), 1);
    twinOptimizer.update({ learningRate: 1e-4, gradientScale: clipping.scale });
    const expected = twin.stateDict();
    model
      .stateDict()
      .forEach((entry, index) =>
        assert.deepEqual(Array.from(entry.data), Array.from(expected[index]!.data), entry.name),
      );
  });

  test('never ends out of region, whatever the learning rate', async () => {
    for (const learningRate of [1e-5, 1e-4, 1e-3, 1e-2]) {
      for (const backoff of ['line-search', 'restore'] as const) {
        const { model, batch, advantages } = await oneAgentBatch();
        const unit = soloUnit(model, 0.002, learningRate);
        const trajectories = batch.trajectories.map((_trajectory, index) => index);
        const result = await trustRegionUpdate(
          {
            unit,
            batch,
            advantages,
            trajectories,
            settings: { ...settings, epochs: 4, minibatches: 2, backoff },
          },
          new RandomGenerator(2),
        );
        assert.ok(
          result.kl <= 0.002 + 1e-9 && result.inRegion,
          `lr ${learningRate} ${backoff}: KL ${result.kl}`,
        );
        if (learningRate >= 1e-3)
          assert.ok(result.lastStepScale < 1, `lr ${learningRate}: the region must have bound`);
        if (backoff === 'restore' && result.lastStepScale < 1) assert.equal(result.stepsUndone, 1);
      }
    }
  });

  test('δ = 0 leaves the agent unchanged', async () => {
    const { model, batch, advantages } = await oneAgentBatch();
    const before = model.stateDict();
    const unit = soloUnit(model, 0, 1e-3);
    await trustRegionUpdate(
      {
        unit,
        batch,
        advantages,
        trajectories: batch.trajectories.map((_t, index) => index),
        settings,
      },
      new RandomGenerator(3),
    );
    model
      .stateDict()
      .forEach((entry, index) =>
        assert.deepEqual(Array.from(entry.data), Array.from(before[index]!.data)),
      );
  });
});

describe('trust-region update in bounded memory', () => {
  async function update(
    distributionBudgetBytes: number | undefined,
    activationBudgetBytes?: number,
  ) {
    const { model, batch, advantages } = await oneAgentBatch();
    const unit = soloUnit(model, 0.002, 1e-2);
    const result = await trustRegionUpdate(
      {
        unit,
        batch,
        advantages,
        trajectories: batch.trajectories.map((_t, index) => index),
        settings: { ...settings, epochs: 2, minibatches: 2 },
        distributionBudgetBytes,
        activationBudgetBytes,
      },
      new RandomGenerator(4),
    );
    return { result, parameters: model.stateDict(), vocab: model.config.vocabSize };
  }

  /**
   * Chunks run the forward pass over fewer sequences at a time, and the native matmul sums in
   * another order for another number of rows, so the logits may differ in the last float32 bit
   * (1e-7 relative); nothing else may differ.
   */
  const close = (actual: number, expected: number, label: string) =>
    assert.ok(
      Math.abs(actual - expected) <= 1e-5 * Math.max(1e-3, Math.abs(expected)),
      `${label}: ${actual} vs ${expected}`,
    );
  const closeArrays = (actual: ArrayLike<number>, expected: ArrayLike<number>, label: string) => {
    assert.equal(actual.length, expected.length, label);
    for (let index = 0; index < expected.length; index++)
      close(actual[index]!, expected[index]!, `${label}[${index}]`);
  };

  test('π_old recomputed chunk by chunk gives the numbers of stored distributions', async () => {
    const stored = await update(undefined);
    // One vocabulary row of budget: every scoring item becomes its own chunk.
    const chunked = await update(4 * stored.vocab);
    const { result } = stored;
    assert.ok(result.tokens.items.length > 4, 'several chunks');
    assert.ok(result.lastStepScale < 1, 'the region bound, so the line search ran');
    for (const key of ['stepsTaken', 'stepsUndone', 'lastStepScale'] as const)
      assert.equal(chunked.result[key], result[key], key);
    close(chunked.result.kl, result.kl, 'kl');
    close(chunked.result.maxTokenKl, result.maxTokenKl, 'maxTokenKl');
    for (const key of ['perTokenKl', 'perTokenTotalVariation', 'newLogProbs'] as const)
      closeArrays(chunked.result[key], result[key], key);
    assert.equal(chunked.result.probabilityShiftByRank.length, 6);
    chunked.result.probabilityShiftByRank.forEach((bucket, index) => {
      const expected = result.probabilityShiftByRank[index]!;
      assert.equal(bucket.tokenCount, expected.tokenCount);
      for (const key of ['meanShift', 'meanOldProbability', 'meanNewProbability'] as const)
        close(bucket[key], expected[key], `rank bucket ${index} ${key}`);
    });
    stored.parameters.forEach((entry, index) =>
      closeArrays(chunked.parameters[index]!.data, entry.data, entry.name),
    );
  });

  test('micro-batched gradient steps take the steps of whole-minibatch ones', async () => {
    const whole = await update(undefined);
    // One byte of activation budget: every scoring item is a micro-batch of its own, and the
    // loss after the first step reads the log-probs of the KL measurement.
    const split = await update(undefined, 1);
    for (const key of ['stepsTaken', 'stepsUndone', 'lastStepScale'] as const)
      assert.equal(split.result[key], whole.result[key], key);
    // Gradients summed over micro-batches round differently; Adam's first steps are sign-like,
    // so parameters agree to about the learning rate's share of a rounding difference.
    const near = (actual: number, expected: number, label: string) =>
      assert.ok(
        Math.abs(actual - expected) <= 1e-3 * Math.max(1e-2, Math.abs(expected)),
        `${label}: ${actual} vs ${expected}`,
      );
    near(split.result.kl, whole.result.kl, 'kl');
    near(split.result.lossMean, whole.result.lossMean, 'loss');
  });
});
