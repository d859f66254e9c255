import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TeamBatch } from '../team/types.js';
import { batchWithinBudget, hasWholeGroups, trajectoryTokens } from './token-budget.js';

/** Prompts × 3 trajectories × 2 turns; turn t of every trajectory of prompt p has `lengths[p][t]` tokens. */
function batchOf(lengths: number[][], resampledFromTurn = 0): TeamBatch {
  const trajectories = lengths.flatMap((turns, problemIndex) =>
    [0, 1, 2].map((sampleIndex) => ({
      problemIndex,
      sampleIndex,
      speakingOrder: [0, 1],
      answerText: '',
      reward: 0,
      correct: false,
      turns: turns.map((length, turnIndex) => ({
        turnIndex,
        agentIndex: turnIndex,
        tokens: Array.from({ length }, () => 1),
        logProbs: Array.from({ length }, () => -1),
        text: '',
        inputIds: [],
      })),
    })),
  );
  const generatedTokens = lengths.reduce(
    (total, turns) => total + 3 * turns.slice(resampledFromTurn).reduce((a, b) => a + b, 0),
    0,
  );
  return {
    problems: lengths.map((_turns, index) => ({ id: `p${index}`, prompt: '', answer: '' })),
    groupSize: 3,
    trajectories,
    generatedTokens,
    resampledFromTurn,
  } as unknown as TeamBatch;
}

describe('batchWithinBudget', () => {
  // Trajectories of prompt 0 cost 5 tokens each, of prompt 1 2 each, of prompt 2 3 each.
  const batch = batchOf([
    [3, 2],
    [1, 1],
    [2, 1],
  ]);

  test('a batch within the budget is kept whole', () => {
    assert.equal(batch.generatedTokens, 30);
    assert.equal(batchWithinBudget(batch, 30), batch);
    assert.equal(batchWithinBudget(batch, 100), batch);
  });

  test('a batch past the budget stops at the trajectory that reaches it', () => {
    const cut = batchWithinBudget(batch, 18);
    // 15 for prompt 0, then two of prompt 1's: 19 ≥ 18.
    assert.equal(cut.generatedTokens, 19);
    assert.equal(cut.problems.length, 2);
    assert.deepEqual(
      cut.trajectories.map((trajectory) => [trajectory.problemIndex, trajectory.sampleIndex]),
      [
        [0, 0],
        [0, 1],
        [0, 2],
        [1, 0],
        [1, 1],
      ],
    );
    assert.equal(hasWholeGroups(cut), false);
    assert.equal(
      batchWithinBudget(batch, 15).trajectories.length,
      3,
      'a budget met exactly stops there',
    );
    assert.equal(hasWholeGroups(batchWithinBudget(batch, 15)), true);
  });

  test('the last prompt keeps two trajectories, never one', () => {
    // 15 + 2 = 17 ≥ 16 after one trajectory of prompt 1: a second joins it.
    const cut = batchWithinBudget(batch, 16);
    assert.equal(cut.trajectories.length, 5);
    assert.equal(cut.generatedTokens, 19);
    assert.equal(batchWithinBudget(batch, 1).trajectories.length, 2);
  });

  test('suffix resampling: only the turns drawn anew count', () => {
    const suffix = batchOf(
      [
        [3, 2],
        [1, 1],
      ],
      1,
    );
    assert.equal(trajectoryTokens(suffix, suffix.trajectories[0]!), 2);
    assert.equal(batchWithinBudget(suffix, 4).generatedTokens, 4);
  });

  test('a budget already spent is a caller error', () => {
    assert.throws(() => batchWithinBudget(batch, 0), /remaining must be positive/);
  });
});
