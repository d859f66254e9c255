import type { Problem } from '../tasks/index.js';

/** One agent's turn in a trajectory, exactly as it was sampled. */
export interface TurnRecord {
  /** Position in the episode's speaking order. */
  turnIndex: number;
  agentIndex: number;
  /** The exact token ids the agent was conditioned on (its role prompt + shared context). */
  inputIds: number[];
  /** The exact token ids it emitted (stop token included), never re-tokenized. */
  tokens: number[];
  /** log π(token | prefix) recorded at sampling, under the policy that sampled it. */
  logProbs: number[];
  /** The turn's content text as other agents see it (stop token removed). */
  text: string;
  finishReason: 'stop' | 'length';
  /** A remote agent's generated tokens as its server reported them (`tokens` is empty). */
  generatedTokenCount?: number;
}

/** One full episode of the team on one problem. */
export interface Trajectory {
  /** Index of the problem in its batch (the GRPO group). */
  problemIndex: number;
  /** Which of the G samples of that problem this is. */
  sampleIndex: number;
  /** Agent index of each turn in speaking order (fixed, or permuted per episode). */
  speakingOrder: number[];
  turns: TurnRecord[];
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
