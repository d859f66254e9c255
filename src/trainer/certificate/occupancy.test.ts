import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { occupancyGap } from '../../rl/index.js';
import type { ScoringItem } from '../../nn/score.js';
import type { TeamBatch } from '../../team/types.js';
import type { TrainableUnit } from '../update/units.js';
import { OccupancyTracker } from './occupancy.js';

/** Trajectories of one token by agent 0 (logged at log ½) then one by agent 1. */
function batchOf(trajectories: number): TeamBatch {
  return {
    problems: [{ id: 'p', prompt: '', answer: '' }],
    groupSize: trajectories,
    generatedTokens: 2 * trajectories,
    resampledFromTurn: 0,
    trajectories: Array.from({ length: trajectories }, (_unused, index) => ({
      problemIndex: 0,
      sampleIndex: index,
      speakingOrder: [0, 1],
      answerText: '',
      reward: 0,
      correct: false,
      turns: [0, 1].map((agentIndex) => ({
        turnIndex: agentIndex,
        agentIndex,
        tokens: [index],
        logProbs: [Math.log(0.5)],
        text: '',
        inputIds: [agentIndex, index],
      })),
    })),
  } as unknown as TeamBatch;
}

const agentZero = { name: 'a0', agentIndices: [0] } as unknown as TrainableUnit;

/** An engine whose updated agent now gives trajectory j's token probability `probabilities[j]`. */
function engineGiving(probabilities: number[]) {
  return {
    completionLogProbs: async (items: readonly ScoringItem[]) =>
      items.map((item) => [Math.log(probabilities[item.completion[0]!]!)]),
  };
}

describe('OccupancyTracker', () => {
  test('the occupancy gap is mean (1 − W)_+, inside [0, 1] where ½·mean|W − 1| is not', async () => {
    // W = 2p: 50 on trajectory 0 (a heavy weight), ½ on the other three.
    const probabilities = [25, 0.25, 0.25, 0.25];
    const tracker = new OccupancyTracker();
    const batch = batchOf(4);
    tracker.begin(batch);
    assert.equal(tracker.gap(), null, 'nothing has moved before the first update');
    await tracker.advance(agentZero.agentIndices, engineGiving(probabilities));
    const estimate = tracker.gap()!;
    assert.ok(Math.abs(estimate.gap - 0.375) < 1e-12, `${estimate.gap}`);
    assert.ok(estimate.interval[0] >= 0 && estimate.interval[1] <= 1);
    const logRatio = probabilities.map((probability) => Math.log(2 * probability));
    assert.ok(
      occupancyGap({ logRatioEarlierAgents: logRatio }).gap > 1,
      'the old estimator leaves [0, 1]',
    );
  });

  test('the effective sample size is 1 while nothing moved and falls when one weight dominates', async () => {
    const tracker = new OccupancyTracker();
    tracker.begin(batchOf(4));
    assert.equal(tracker.relativeEffectiveSampleSize(), 1);
    await tracker.advance(agentZero.agentIndices, engineGiving([25, 0.25, 0.25, 0.25]));
    // Weights 50, ½, ½, ½: (51.5)² / (2500.75) / 4.
    const expected = (51.5 * 51.5) / 2500.75 / 4;
    assert.ok(Math.abs(tracker.relativeEffectiveSampleSize() - expected) < 1e-12);
    assert.equal(tracker.batch?.trajectories.length, 4);
  });
});
