import type { Problem } from '../tasks/index.js';
import type { Completion } from './policy.js';

/**
 * One agent's turn in a trajectory, exactly as it was sampled: the agent's completion (the
 * token ids it was conditioned on and emitted, never re-tokenized, with the log-probs it gave
 * them) and where the turn stands in the episode.
 */
export interface TurnRecord extends Completion {
  /** Position in the episode's speaking order. */
  turnIndex: number;
  agentIndex: number;
}

/** One episode of the team on one problem, as its agents played it. */
export interface Episode {
  /** Index of the problem in its batch (the GRPO group). */
  problemIndex: number;
  /** Which of the G samples of that problem this is. */
  sampleIndex: number;
  /** Agent index of each turn in speaking order (fixed, or permuted per episode). */
  speakingOrder: number[];
  /**
   * The turns played, in order: every turn of the protocol, unless a bound on the episode's
   * tokens (a served request's max_tokens) ended it early.
   */
  turns: TurnRecord[];
}

/** One full episode of the team on one problem, scored by the task's verifier. */
export interface Trajectory extends Episode {
  /** Content text of the answer turn. */
  answerText: string;
  /** Team reward in [0, 1] from the task's verifier, shared by every agent. */
  reward: number;
  correct: boolean;
}

/** B problems × G trajectories sampled from one team. */
export interface TeamBatch {
  problems: Problem[];
  groupSize: number;
  /** Ordered problem by problem, then sample by sample: index = problemIndex·G + sampleIndex. */
  trajectories: Trajectory[];
  /** Tokens the policies generated for this batch (reused prefixes excluded). */
  generatedTokens: number;
  /** First turn that was sampled anew (0 = full rollout; > 0 = suffix resampling). */
  resampledFromTurn: number;
}

export function meanReward(batch: TeamBatch): number {
  if (batch.trajectories.length === 0) return 0;
  return (
    batch.trajectories.reduce((total, trajectory) => total + trajectory.reward, 0) /
    batch.trajectories.length
  );
}
