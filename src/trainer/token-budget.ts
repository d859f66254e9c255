import { generatedTokenCount } from '../team/episodes.js';
import type { TeamBatch, Trajectory } from '../team/types.js';

/**
 * Budgets stop at the token. A batch that would run past the run's generated-token budget is
 * cut after the trajectory whose tokens reach the budget, keeping at least two trajectories of
 * its prompt (a group needs two for a baseline): a run overshoots by less than two
 * trajectories. A batch is ordered prompt by prompt and trajectory j draws from the random
 * stream (seed, j, turn), so the kept trajectories are exactly what sampling only them would
 * have given: the cut batch is a smaller sample whose cost is counted in full.
 */

/** Tokens `trajectory` generated in `batch` (turns reused by suffix resampling excluded). */
export function trajectoryTokens(batch: TeamBatch, trajectory: Trajectory): number {
  let tokens = 0;
  for (const turn of trajectory.turns)
    if (turn.turnIndex >= batch.resampledFromTurn) tokens += generatedTokenCount(turn);
  return tokens;
}

/**
 * `batch` itself when its tokens stay within `remaining`; else its trajectories up to the one
 * whose tokens reach `remaining` (and a second of that prompt, when it would stand alone), with
 * the prompts they belong to. `remaining` must be positive.
 */
export function batchWithinBudget(batch: TeamBatch, remaining: number): TeamBatch {
  if (!(remaining > 0))
    throw new RangeError(`batchWithinBudget: remaining must be positive, got ${remaining}`);
  if (batch.generatedTokens <= remaining) return batch;
  const { trajectories } = batch;
  let kept = 0;
  let spent = 0;
  while (kept < trajectories.length && spent < remaining) spent += trajectoryCost(batch, kept++);
  const last = trajectories[kept - 1]!;
  const next = trajectories[kept];
  if (next && next.problemIndex === last.problemIndex && last.sampleIndex === 0)
    spent += trajectoryCost(batch, kept++);
  if (kept === trajectories.length) return batch;
  return {
    ...batch,
    problems: batch.problems.slice(0, last.problemIndex + 1),
    trajectories: trajectories.slice(0, kept),
    generatedTokens: spent,
  };
}

function trajectoryCost(batch: TeamBatch, index: number): number {
  return trajectoryTokens(batch, batch.trajectories[index]!);
}

/** Whether every prompt of `batch` has its whole group (a cut batch's last may not). */
export function hasWholeGroups(batch: TeamBatch): boolean {
  return batch.trajectories.length === batch.problems.length * batch.groupSize;
}
