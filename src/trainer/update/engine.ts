import type { PolicyLoss, RankBucketShift } from '../../rl/index.js';
import type { ScoringItem } from '../../nn/score.js';
import type { TeamBatch } from '../../team/types.js';
import type { UnitTokens } from './token-grid.js';

/**
 * One trainable unit's model, wherever it lives: what a stage and the trust-region update
 * (trust-region.ts) do to it. A local unit's weights are in this process (local/engine.ts); a
 * unit on a Tinker service reaches its weights over HTTP and sees log-probs of given tokens
 * only (tinker/engine.ts). The factory (engines.ts) picks one per unit. Every engine passes the
 * contract of test-support/engine-contract.ts.
 */
export interface UnitEngine {
  /** log π(token | prefix) of every completion token of `items`, item by item. */
  completionLogProbs(items: readonly ScoringItem[]): Promise<ArrayLike<number>[]>;
  /** Starts an update of the unit on `plan.tokens`: π_old is the policy now. */
  beginUpdate(plan: UpdatePlan): Promise<UpdateSession>;
  /**
   * Fixes π_old on `batch`, a batch the update never sees (the stage's held-out prompts), so
   * that `after()` reads the certificate's evidence there once the update is done.
   */
  holdOut(batch: TeamBatch): Promise<{ after(): Promise<CertificateEvidence> }>;
  /** Rollouts keep the final hidden states of this unit's turns (its exact KL reuses them). */
  readonly keepsSampledHiddenStates: boolean;
  /** Parameters and optimizer state now; its `restore` puts them back (stage rollback). */
  snapshot(): Promise<EngineSnapshot>;
  /** Writes the unit's part of a run checkpoint into `directory`; `load` reads it back. */
  save(directory: string, options: SaveUnitOptions): Promise<void>;
  load(directory: string): Promise<void>;
  /** Frees what the unit holds (its model's memory, its service session). */
  dispose(): void;
}

export interface EngineSnapshot {
  restore(): Promise<void>;
}

export interface SaveUnitOptions {
  /** Tokenizer JSON saved with the unit. */
  tokenizer: unknown;
  /** Also save a LoRA unit's frozen base weights. @default false */
  baseWeights?: boolean;
}

/** How an update runs; the radius δ and the learning rate are the unit's own. */
export interface TrustRegionSettings {
  epochs: number;
  minibatches: number;
  backoff: 'restore' | 'line-search';
  maxGradNorm: number;
  /** The objective's loss (rl/objectives) with its settings. */
  policyLoss: PolicyLoss;
}

/** What an update works on, from its start. */
export interface UpdatePlan {
  /** The unit's tokens of the batch (π_old's samples), in scoring order. */
  tokens: UnitTokens;
  /** Per-trajectory advantages for the loss. */
  advantages: ArrayLike<number>;
  settings: TrustRegionSettings;
  /** The trust-region radius: a measurement is in region when its KL is at most δ. */
  delta: number;
  /**
   * Bytes of full-vocabulary distributions an exact KL holds at once (local engine).
   * @default distributionBudgetBytes (64 MiB)
   */
  distributionBudgetBytes?: number;
  /**
   * Bytes of activations a local gradient step keeps for its backward pass.
   * @default activationBudgetBytes (512 MiB)
   */
  activationBudgetBytes?: number;
}

/**
 * One update in progress. `step` takes an optimizer step; `measure` measures the parameters it
 * left; `keep` makes them the ones a back-off returns to; `scaleStep` and `undoStep` back off.
 */
export interface UpdateSession {
  /** One optimizer step on `minibatch`: the objective's gradient, clipped, then the optimizer. */
  step(minibatch: UnitTokens): Promise<StepOutcome>;
  /**
   * The KL of the parameters now against π_old over the whole batch, with the certificate's
   * evidence. `next`: the minibatch the next step will take if these parameters are in region
   * (null: none); an engine may do part of that step's work now (the local one runs its forward
   * pass, whose hidden states the measurement shares).
   */
  measure(next: UnitTokens | null): Promise<Measurement>;
  /** The parameters now are in region: a back-off returns to them. */
  keep(): Promise<void>;
  /** Whether `scaleStep` is possible (it is not over an API that only steps). */
  readonly scalesSteps: boolean;
  /** The kept parameters plus `scale` × the last step (a line search along it). */
  scaleStep(scale: number): Promise<void>;
  /** Back to the kept parameters (the optimizer's moments stay, see parameter-state.ts). */
  undoStep(): Promise<void>;
}

export interface StepOutcome {
  loss: number;
  clipFraction: number;
  /** The gradient's norm before clipping. */
  gradientNorm: number;
}

/** One measurement of the parameters an update is at. */
export interface Measurement {
  /** Mean token KL(π_old ‖ π_now) over the unit's tokens. */
  kl: number;
  maxTokenKl: number;
  /** kl ≤ δ: the parameters may be kept. */
  inRegion: boolean;
  /** The certificate's evidence at these parameters. */
  evidence(): CertificateEvidence;
  /** How probability moved between the tokens π_old ranked 1st, 2nd, … (empty: not known). */
  probabilityShiftByRank(): RankBucketShift[];
  /** log π_now of the unit's tokens in scoring order, from the same pass (when it ran one). */
  scoredLogProbs(): Float32Array | undefined;
  /** Which quantities are estimates (absent: every one is exact). */
  estimates?: Estimates;
}

/**
 * What a measurement from sampled-token log-probs alone estimates (docs/method.md §3, "Agents
 * on a Tinker service"); an update record carries these fields.
 */
export interface Estimates {
  /** The KL, its maximum, the first-order penalty and the trajectory shift use k3 estimates. */
  klEstimated: true;
  /** Standard error of the estimated mean token KL (null with fewer than two trajectories). */
  klStandardError: number | null;
  /** The second-order penalty uses ½|r − 1| as the per-token total variation. */
  totalVariationEstimated: true;
}

/**
 * What a certificate reads from one batch sampled by π_old: the agent's tokens and, per token,
 * log π_new of the sampled token, KL(π_old ‖ π_new) and TV(π_old, π_new) of its next-token
 * distribution (exact, or estimated: Measurement.estimates). Grids are [rows·length]
 * (token-grid.ts).
 */
export interface CertificateEvidence {
  tokens: UnitTokens;
  newLogProbs: Float32Array;
  perTokenKl: Float32Array;
  perTokenTotalVariation: Float32Array;
}

/** A step is kept when the KL it leads to is at most δ (the one place this is decided). */
export function withinRadius(kl: number, delta: number): boolean {
  return kl <= delta;
}
