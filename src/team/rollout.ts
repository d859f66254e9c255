import type { Problem, Task } from '../tasks/index.js';
import { playEpisodes } from './episodes.js';
import { hasSeveralRounds, type Team } from './team.js';
import type { TeamBatch, Trajectory } from './types.js';

export interface RolloutOptions {
  team: Team;
  task: Task;
  problems: readonly Problem[];
  /** G: trajectories per problem. */
  groupSize: number;
  /**
   * Seed of the batch's random streams. Trajectory j's turn k always draws from the stream
   * (seed, j, k), so two batches with the same seed use common random numbers: an agent
   * whose policy and context did not change samples the same tokens.
   */
  seed: string;
  /** Sampling temperature. @default 1 */
  temperature?: number;
  /**
   * Suffix resampling: reuse `previous`'s turns before `fromTurn` and sample turns
   * fromTurn..end anew. Valid when only agents speaking at or after `fromTurn` changed since
   * `previous` was sampled, the protocol has a single round and the order is fixed: the
   * prefix then has exactly the distribution a full resample would give it.
   */
  reuse?: { previous: TeamBatch; fromTurn: number };
  /**
   * Agents whose turns keep the final hidden states that predicted their tokens
   * (TurnRecord.hiddenStates): an update of one of them reads π_old from them.
   */
  keepHiddenStatesOf?: readonly number[];
}

/**
 * Samples B problems × G trajectories with the current team (playEpisodes, the path a server
 * plays the team by too) and scores each with the task's verifier.
 */
export async function rollout(options: RolloutOptions): Promise<TeamBatch> {
  const { team, task, problems, groupSize, seed } = options;
  const fromTurn = options.reuse?.fromTurn ?? 0;
  if (options.reuse) validateReuse(options);
  const played = await playEpisodes({
    team,
    prompts: problems.map((problem) => problem.prompt),
    groupSize,
    seed,
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.reuse
      ? { reuse: { previous: options.reuse.previous.trajectories, fromTurn } }
      : {}),
    ...(options.keepHiddenStatesOf ? { keepHiddenStatesOf: options.keepHiddenStatesOf } : {}),
  });
  const trajectories: Trajectory[] = [];
  for (const episode of played.episodes) {
    const answerText = episode.turns[team.protocol.answerTurn]!.text;
    const verdict = await task.verify(problems[episode.problemIndex]!, answerText);
    trajectories.push({ ...episode, answerText, reward: verdict.reward, correct: verdict.correct });
  }
  return {
    problems: [...problems],
    groupSize,
    trajectories,
    generatedTokens: played.generatedTokens,
    resampledFromTurn: fromTurn,
  };
}

function validateReuse(options: RolloutOptions): void {
  const { previous, fromTurn } = options.reuse!;
  const { protocol } = options.team;
  if (hasSeveralRounds(protocol) || protocol.permutePerEpisode) {
    throw new Error('suffix resampling needs a single-round protocol with a fixed order');
  }
  if (
    previous.trajectories.length !== options.problems.length * options.groupSize ||
    previous.problems.some((problem, index) => problem.id !== options.problems[index]?.id)
  ) {
    throw new Error('suffix resampling must reuse a batch of the same problems and group size');
  }
  if (!(fromTurn >= 0 && fromTurn <= protocol.turnOrder.length))
    throw new Error(`fromTurn ${fromTurn} out of range`);
}
