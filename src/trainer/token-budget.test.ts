import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TeamBatch } from '../team/types.js';
import { batchWithinBudget, tokensPerPrompt } from './token-budget.js';

/** Prompts × 2 trajectories × 2 turns; turn t of prompt p has `lengths[p][t]` tokens. */
function batchOf(lengths: number[][], resampledFromTurn = 0): TeamBatch {
  const trajectories = lengths.flatMap((turns, problemIndex) =>
    [0, 1].map((sampleIndex) => ({
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
    (total, turns) => total + 2 * turns.slice(resampledFromTurn).reduce((a, b) => a + b, 0),
    0,
  );
  return {
    problems: lengths.map((_turns, index) => ({ id: `p${index}`, prompt: '', answer: '' })),
    groupSize: 2,
    trajectories,
    generatedTokens,
    resampledFromTurn,
  } as unknown as TeamBatch;
}

describe('batchWithinBudget', () => {
  test('a batch within the budget is kept whole', () => {
    const batch = batchOf([
      [3, 2],
      [1, 1],
    ]);
    assert.equal(batch.generatedTokens, 14);
    assert.equal(batchWithinBudget(batch, 14), batch);
    assert.equal(batchWithinBudget(batch, 100), batch);
  });

  test('a batch past the budget keeps the prompts up to the one that reaches it', () => {
    // Prompt groups cost 10, 4 and 6 tokens.
    const batch = batchOf([
      [3, 2],
      [1, 1],
      [2, 1],
    ]);
    const cut = batchWithinBudget(batch, 12);
    assert.equal(cut.problems.length, 2);
    assert.deepEqual(
      cut.trajectories.map((trajectory) => trajectory.problemIndex),
      [0, 0, 1, 1],
    );
    assert.equal(cut.generatedTokens, 14, 'overshoots by less than one prompt group');
    assert.equal(
      batchWithinBudget(batch, 10).problems.length,
      1,
      'a budget met exactly stops there',
    );
    assert.equal(batchWithinBudget(batch, 1).problems.length, 1, 'at least one prompt');
  });

  test('suffix resampling: only the turns drawn anew count', () => {
    const batch = batchOf(
      [
        [3, 2],
        [1, 1],
      ],
      1,
    );
    assert.deepEqual(tokensPerPrompt(batch), [4, 2]);
    assert.equal(batchWithinBudget(batch, 3).generatedTokens, 4);
  });

  test('a budget already spent is a caller error', () => {
    assert.throws(() => batchWithinBudget(batchOf([[1, 1]]), 0), /remaining must be positive/);
  });
});
