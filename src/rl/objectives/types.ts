import type { LossAggregation } from '../aggregation.js';
import type { NumberArray } from '../layout.js';
import type { ClippedSurrogateResult } from '../surrogate.js';

/** The resolved hyper-parameters of an objective (its defaults, overridden by the config). */
export interface ObjectiveSettings {
  clipLow: number;
  clipHigh: number;
  aggregation: LossAggregation;
  /** Baseline of each trajectory from the other members of its group only. */
  leaveOneOut: boolean;
  /** Dr. MAS: normalize advantages with each agent's own statistics. */
  agentWiseNormalization: boolean;
  /** DAPO: drop prompt groups whose rewards are all equal (their advantages carry no signal). */
  dynamicSampling: boolean;
}

export interface AdvantageInput {
  /** [trajectories] team reward of each trajectory. */
  rewards: NumberArray;
  /** [trajectories] the prompt each trajectory answers (its GRPO group). */
  problemIds: NumberArray;
  /** [trajectories] 1 where the agent being updated speaks in the trajectory, else 0. */
  agentActs: NumberArray;
  settings: ObjectiveSettings;
}

export interface AdvantageEstimate {
  /** [trajectories] advantage of each trajectory for the agent's loss. */
  advantages: Float64Array;
  /** Trajectories that take part in the loss (dynamic sampling drops the rest), ascending. */
  keptTrajectories: number[];
  droppedGroups: number;
}

/** Inputs of a policy loss over one agent's token grid (see layout.ts). */
export interface PolicyLossInput {
  /** [rows, length] log π_new of the tokens taken. */
  logProbs: NumberArray;
  /** [rows, length] log π_old of the same tokens, recorded at sampling. */
  oldLogProbs: NumberArray;
  /** [rows, length] per-token advantage. */
  advantages: NumberArray;
  /** [rows, length] 1 on the agent's tokens. */
  mask: NumberArray;
  rows: number;
}

/** A policy loss with its gradient with respect to the new log-probabilities. */
export type PolicyLoss = (input: PolicyLossInput) => ClippedSurrogateResult;

/**
 * An RL objective: how advantages come from team rewards, and the loss the trust-region update
 * minimizes. Pure functions; adding one is a file in this folder and a line in index.ts.
 */
export interface Objective {
  readonly name: string;
  /** One line for `--help` and the docs. */
  readonly description: string;
  /** Settings the config may leave out. */
  readonly defaults: Pick<
    ObjectiveSettings,
    'clipLow' | 'clipHigh' | 'aggregation' | 'dynamicSampling'
  >;
  advantages(input: AdvantageInput): AdvantageEstimate;
  /** The loss under these settings. */
  policyLoss(settings: ObjectiveSettings): PolicyLoss;
}
