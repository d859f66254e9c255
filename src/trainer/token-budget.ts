import { generatedTokenCount } from '../team/episodes.js';
import type { TeamBatch } from '../team/types.js';

/**
 * Budgets stop at the token. A batch that would run past the run's generated-token budget is
 * cut to its first prompts: every prompt up to and including the one whose tokens reach the
 * budget, so a run overshoots by less than one prompt group (G trajectories of one prompt).
 * Trajectory j of a batch draws from the random stream (seed, j, turn) and a batch is ordered
 * prompt by prompt, so the first k prompts of a batch are exactly what sampling k prompts would
 * have given: the cut batch is a sample of k prompts whose cost is counted in full.
 */

/** Tokens each prompt group of `batch` generated (turns reused by suffix resampling excluded). */
export function tokensPerPrompt(batch: TeamBatch): number[] {
  const perPrompt = batch.problems.map(() => 0);
  for (const trajectory of batch.trajectories)
    for (const turn of trajectory.turns)
      if (turn.turnIndex >= batch.resampledFromTurn)
        perPrompt[trajectory.problemIndex]! += generatedTokenCount(turn);
  return perPrompt;
}

/**
 * `batch` itself when its tokens stay within `remaining`, else its first prompts up to the one
 * whose tokens reach `remaining` (at least one prompt; `remaining` must be positive).
 */
export function batchWithinBudget(batch: TeamBatch, remaining: number): TeamBatch {
  if (!(remaining > 0))
    throw new RangeError(`batchWithinBudget: remaining must be positive, got ${remaining}`);
  if (batch.generatedTokens <= remaining) return batch;
  const perPrompt = tokensPerPrompt(batch);
  let count = 0;
  let spent = 0;
  while (count < perPrompt.length && spent < remaining) spent += perPrompt[count++]!;
  if (count === perPrompt.length) return batch;
  return {
    ...batch,
    problems: batch.problems.slice(0, count),
    trajectories: batch.trajectories.filter((trajectory) => trajectory.problemIndex < count),
    generatedTokens: spent,
  };
}
