import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { grpoAdvantages } from '../../../rl/index.js';
import { applyLora, loraLayers } from '../../../nn/lora.js';
import type { TransformerLM } from '../../../nn/transformer.js';
import { AdamW } from '../../../optim/adamw.js';
import { setBackend } from '../../../backend/index.js';
import { isGradientEnabled } from '../../../tensor/index.js';
import { rollout } from '../../../team/rollout.js';
import { tinyTask, tinyTeam } from '../../../team/test-support/tiny-team.js';
import { RandomGenerator } from '../../../util/random.js';
import { activationBytes } from './gradient-step.js';
import { separatePassesUpdate } from '../../test-support/separate-passes.js';
import { collectUnitTokens } from '../token-grid.js';
import {
  trustRegionUpdate,
  type TrustRegionResult,
  type TrustRegionSettings,
  type TrustRegionUpdateOptions,
} from '../trust-region.js';
import { clippedSettings } from '../../test-support/trust-region-settings.js';

const settings = clippedSettings(2, 2);

interface Setup {
  lora: boolean;
  learningRate: number;
  delta: number;
  backoff: TrustRegionSettings['backoff'];
  /** In vocabulary rows of distributions; undefined: the default budget. */
  distributionPositions?: number;
  /** A share of the whole batch's activation bytes; undefined: the default budget. */
  activationShare?: number;
  /** Trajectories that take part (dynamic sampling drops the rest); undefined: all. */
  participating?: number;
  /**
   * LoRA attached before the rollout, whose sampler keeps the agent's final hidden states
   * ('fresh'), or keeps them and the adapters change before the update ('stale'), or does not
   * keep them ('not kept').
   */
  sampledHidden?: 'fresh' | 'stale' | 'not kept';
}

/**
 * One agent of a tiny team after a rollout, ready for an update: the model (trained fully, or
 * through LoRA adapters on a frozen body and head), its batch and advantages. Every call builds
 * the same one, so two updates start from identical states.
 */
async function agentUpdate(setup: Setup) {
  const team = tinyTeam({ agents: 2, seed: 11, initStd: 5 });
  const task = tinyTask(2);
  const model = team.agents[1]!.policy.model!;
  const attachLora = () =>
    applyLora(model, {
      rank: 2,
      alpha: 4,
      targetModules: ['queryProjection', 'valueProjection', 'downProjection'],
      random: new RandomGenerator(4),
    });
  if (setup.sampledHidden) {
    attachLora();
    for (const adapter of loraLayers(model).values()) adapter.loraB.data.fill(0.01);
  }
  const batch = await rollout({
    team,
    task,
    problems: task.split('train', { seed: 0, count: 4 }),
    groupSize: 8,
    seed: 'passes',
    keepHiddenStatesOf: setup.sampledHidden && setup.sampledHidden !== 'not kept' ? [1] : [],
  });
  if (setup.sampledHidden === 'stale')
    for (const adapter of loraLayers(model).values()) adapter.loraB.data.fill(0.02);
  batch.trajectories.forEach(
    (trajectory, index) => (trajectory.reward = (trajectory.answerText.length + index) % 3),
  );
  const advantages = grpoAdvantages({
    rewards: batch.trajectories.map((trajectory) => trajectory.reward),
    groupIds: batch.trajectories.map((trajectory) => trajectory.problemIndex),
  }).advantages;
  if (setup.lora && !setup.sampledHidden) attachLora();
  const tokens = collectUnitTokens(batch, [1]);
  const options: TrustRegionUpdateOptions = {
    unit: {
      name: 'second',
      model,
      optimizer: new AdamW(model.trainableParameters()),
      agentIndices: [1],
      delta: setup.delta,
      learningRate: setup.learningRate,
    },
    batch,
    advantages,
    trajectories: batch.trajectories
      .map((_trajectory, index) => index)
      .slice(0, setup.participating),
    settings: { ...settings, backoff: setup.backoff },
    distributionBudgetBytes:
      setup.distributionPositions && 4 * model.config.vocabSize * setup.distributionPositions,
    activationBudgetBytes:
      setup.activationShare && activationBytes(model, tokens.items) * setup.activationShare,
  };
  const random = new RandomGenerator('minibatch order');
  return { options, random, model, positions: countForwardPositions(model) };
}

/**
 * Counts the real (unpadded) token positions every forward pass of `model` runs through its
 * layers, with and without gradients.
 */
function countForwardPositions(model: TransformerLM) {
  const counts = { withGradients: 0, withoutGradients: 0 };
  const forwardHidden = model.forwardHidden.bind(model);
  model.forwardHidden = (input) => {
    // A pass through a KV cache runs slots [cache.length, + length) of its rows; one after a
    // shared prefix's keys (with gradients), slots [before, + length).
    const start = input.cache?.length ?? input.keysValues?.before ?? 0;
    const capacity = input.cache?.capacity ?? start + input.length;
    let real = 0;
    for (let row = 0; row < input.batch; row++)
      for (let slot = start; slot < start + input.length; slot++)
        real += input.keyMask?.[row * capacity + slot] ?? 1;
    if (isGradientEnabled()) counts.withGradients += real;
    else counts.withoutGradients += real;
    return forwardHidden(input);
  };
  return counts;
}

/** Runs today's update and the one with separate passes on identical starts. */
async function bothUpdates(setup: Setup) {
  const shared = await agentUpdate(setup);
  const separate = await agentUpdate(setup);
  const result = await trustRegionUpdate(shared.options, shared.random);
  const expected = separatePassesUpdate(separate.options, separate.random);
  return { shared, separate, result, expected };
}

/** Runs both updates of `setup` and asserts they agree; returns "steps/last scale". */
async function assertBothUpdatesAgree(setup: Setup): Promise<string> {
  const { shared, separate, result, expected } = await bothUpdates(setup);
  assertSameUpdate(
    JSON.stringify(setup),
    { result, model: shared.model, random: shared.random },
    { result: expected, model: separate.model, random: separate.random },
  );
  return `${result.stepsTaken}/${result.lastStepScale}`;
}

function assertSameUpdate(
  label: string,
  actual: { result: TrustRegionResult; model: TransformerLM; random: RandomGenerator },
  expected: { result: TrustRegionResult; model: TransformerLM; random: RandomGenerator },
) {
  const { result } = actual;
  for (const key of [
    'kl',
    'maxTokenKl',
    'inRegion',
    'stepsTaken',
    'stepsUndone',
    'lastStepScale',
    'lossMean',
    'clipFraction',
    'gradientNorm',
  ] as const)
    assert.equal(result[key], expected.result[key], `${label}: ${key}`);
  for (const key of [
    'perTokenKl',
    'perTokenTotalVariation',
    'newLogProbs',
    'scoredLogProbs',
  ] as const)
    assert.deepEqual(result[key], expected.result[key], `${label}: ${key}`);
  assert.deepEqual(
    result.probabilityShiftByRank,
    expected.result.probabilityShiftByRank,
    `${label}: probabilityShiftByRank`,
  );
  const parameters = expected.model.stateDict();
  actual.model
    .stateDict()
    .forEach((entry, index) =>
      assert.deepEqual(entry.data, parameters[index]!.data, `${label}: ${entry.name}`),
    );
  // The random stream is where the separate passes leave it (a drawn epoch is put back).
  assert.deepEqual(actual.random.getState(), expected.random.getState(), `${label}: random`);
}

describe('trust-region update sharing forward passes', () => {
  /** Updates that end in every way: all four steps in region, line searches, restores. */
  const endings: Array<
    Pick<Setup, 'lora' | 'learningRate' | 'delta' | 'backoff' | 'participating'>
  > = [
    // four steps, then a line search on the last (a measurement of its own)
    { lora: false, learningRate: 1e-4, delta: 0.02, backoff: 'line-search' },
    // two steps: the measurement shared with the third step's forward pass is out of region,
    // after the next epoch's shuffle was drawn (and put back)
    { lora: false, learningRate: 1e-4, delta: 0.006, backoff: 'line-search' },
    // the first step undone
    { lora: false, learningRate: 3e-2, delta: 0.02, backoff: 'restore' },
    // four steps in region
    { lora: true, learningRate: 1e-4, delta: 0.02, backoff: 'line-search' },
    // three steps and a line search inside the fourth step's forward pass
    { lora: true, learningRate: 3e-3, delta: 0.02, backoff: 'line-search' },
    { lora: true, learningRate: 3e-2, delta: 0.02, backoff: 'restore' },
    // dynamic sampling dropped a quarter of the trajectories: the measurements still cover them
    { lora: true, learningRate: 3e-3, delta: 0.02, backoff: 'line-search', participating: 24 },
  ];

  test('gives the numbers of separate passes, bit for bit, however the update ends', async () => {
    const outcomes: string[] = [];
    for (const ending of endings)
      // Distributions: one stored pass, or chunks of 40 positions (a LoRA model keeps hidden
      // states, a full one recomputes π_old from copied parameters). Activations: every step
      // whole, or every step in micro-batches of a few items (a share of 0.15 of the batch's
      // activations); both share their forward passes with the measurements.
      for (const distributionPositions of [undefined, 40])
        for (const activationShare of [undefined, 0.15]) {
          const setup = { ...ending, distributionPositions, activationShare };
          const outcome = await assertBothUpdatesAgree(setup);
          outcomes.push(outcome);
        }
    // The endings happened as described above (so each path ran).
    for (const outcome of ['4/0.5', '2/0.5', '1/0', '4/1', '3/0.25'])
      assert.ok(outcomes.includes(outcome), `${outcome} not in ${outcomes.join(' ')}`);
  });

  test('every item its own micro-batch: the same numbers on the TypeScript backend', async () => {
    // Natively, a float32 product of at most 16 rows takes the skinny kernels, which sum in
    // another order (native/src/matmul.c): a lone short item's hidden states would differ in
    // the last bits from those of a measurement's pass over many. The TypeScript backend sums
    // each entry in one order whatever the rows.
    setBackend('typescript');
    try {
      for (const ending of [endings[1]!, endings[4]!])
        await assertBothUpdatesAgree({
          ...ending,
          distributionPositions: 40,
          activationShare: 1e-6,
        });
    } finally {
      setBackend('auto');
    }
  });

  test('π_old from the hidden states kept while sampling: the same numbers, no π_old pass', async () => {
    const base = { lora: true, learningRate: 3e-3, delta: 0.02, backoff: 'line-search' } as const;
    const positions: Record<string, number> = {};
    for (const sampledHidden of ['fresh', 'stale', 'not kept'] as const)
      for (const activationShare of [undefined, 0.15]) {
        const setup = { ...base, sampledHidden, activationShare };
        const { shared, separate, result, expected } = await bothUpdates(setup);
        assertSameUpdate(
          JSON.stringify(setup),
          { result, model: shared.model, random: shared.random },
          { result: expected, model: separate.model, random: separate.random },
        );
        const tokens = collectUnitTokens(shared.options.batch, [1]);
        assert.ok(tokens.items.every((item) => item.completion.length > 0));
        assert.equal(tokens.sampledHidden.every(Boolean), sampledHidden !== 'not kept');
        positions[`${sampledHidden}/${activationShare}`] = shared.positions.withoutGradients;
      }
    // The same update with and without the kept states: without them π_old runs the layers
    // over the half of the batch the first step did not. Stale ones fail the check against the
    // first step's forward pass, and the numbers stay those of separate passes (above).
    for (const activationShare of [undefined, 0.15])
      assert.ok(
        positions[`fresh/${activationShare}`]! < positions[`not kept/${activationShare}`]!,
        JSON.stringify(positions),
      );
  });

  test('runs half a batch fewer through the layers for π_old and for each shared measurement', async () => {
    for (const lora of [false, true])
      for (const activationShare of [undefined, 0.15]) {
        const setup = {
          lora,
          learningRate: 1e-4,
          delta: 0.5,
          backoff: 'line-search',
          activationShare,
        } as const;
        const { shared, separate, result, expected } = await bothUpdates(setup);
        assert.equal(result.stepsTaken, 4);
        assert.equal(expected.stepsTaken, 4);
        const { items } = collectUnitTokens(shared.options.batch, [1]);
        const batchPositions = items.reduce(
          (total, item) => total + item.context.length + item.completion.length,
          0,
        );
        // Gradient steps: four minibatches of half the batch, whole or in micro-batches; a
        // LoRA agent's run a prompt its group shares once (the same steps in both updates).
        assert.equal(shared.positions.withGradients, separate.positions.withGradients);
        if (!lora) assert.equal(shared.positions.withGradients, 2 * batchPositions);
        else assert.ok(shared.positions.withGradients < 0.9 * 2 * batchPositions);
        // Without gradients, before: π_old and four measurements of the whole batch. Now π_old
        // and three measurements skip the minibatch whose forward pass they share: two epochs'
        // worth.
        assert.equal(separate.positions.withoutGradients, 5 * batchPositions);
        if (!lora) assert.equal(shared.positions.withoutGradients, 3 * batchPositions);
        // A LoRA agent sums in one order at every row count, so a prompt its group shares runs
        // once in those passes (each plan saves at least a tenth of a pass's positions).
        else assert.ok(shared.positions.withoutGradients < 0.9 * 3 * batchPositions);
      }
  });
});
