/**
 * The records a run writes to metrics.jsonl, one JSON object per line, discriminated by
 * `type`. Field names are the public contract read by the dashboard and reports.
 */

export interface RankShiftSummary {
  lowestRank: number;
  highestRank: number;
  meanShift: number;
  massShiftPerPosition: number;
}

/** Every certificate quantity of one update (docs/method.md §5); computed in certify.ts. */
export interface UpdateCertificate {
  /** Surrogate gain L (unclipped importance-weighted advantage, reward units). */
  surrogate: number;
  surrogateStandardError: number;
  /**
   * 2ε·E[Σ_k Σ_{j<k} √(KL_j/2)] over every step k up to the agent's horizon (its turns × the
   * longest turn): the first-order penalty, a bound.
   */
  penalty: number;
  /** Extra term of the sequential-stale schedule (earlier agents' trajectory shift). */
  stalePenalty: number;
  /** Certified lower bound L − penalty − stalePenalty (first order). */
  certificate: number;
  /**
   * ε·E[Σ_k |W_k − 1|·TV_k] (docs/method.md §5): the second-order penalty, also a bound. Absent
   * in runs recorded before it existed.
   */
  secondOrderPenalty?: number;
  /** L − secondOrderPenalty − stalePenalty: the second-order certified lower bound. */
  secondOrderCertificate?: number;
  /**
   * The same bounds on the held-out batch (sampled before the update on prompts it never saw):
   * unbiased estimates of them, where those above read high (the update maximized the surrogate
   * on its own batch). Null, or absent in older runs, when held-out measurement is off.
   */
  heldOutSurrogate?: number | null;
  heldOutSurrogateStandardError?: number | null;
  heldOutCertificate?: number | null;
  heldOutSecondOrderCertificate?: number | null;
  /** Σ over the agent's tokens of E√(KL/2): its own trajectory-level shift. */
  trajectoryShift: number;
  offPolicyEstimate: number;
  offPolicyStandardError: number;
  offPolicyLowerBound: number;
  probabilityShiftByRank: RankShiftSummary[];
}

/** Where a trust-region update (trust-region.ts) ended, and the steps it took to get there. */
export interface TrustRegionOutcome {
  /**
   * Token-level KL(π_old ‖ π_new) of the accepted parameters over the agent's tokens (exact,
   * full vocabulary; docs/method.md §3).
   */
  kl: number;
  maxTokenKl: number;
  inRegion: boolean;
  stepsTaken: number;
  stepsUndone: number;
  /** Line-search scale of the last step (1 = taken whole, 0 = undone). */
  lastStepScale: number;
}

export interface UpdateRecord extends UpdateCertificate, TrustRegionOutcome {
  type: 'update';
  stage: number;
  /** Position of the update within its stage. */
  updateIndex: number;
  /** Count of updates since the run began (the x-axis of per-update figures). */
  globalUpdate: number;
  schedule: string;
  agent: string;
  /** Cumulative generated tokens when the update's batch was complete. */
  generatedTokens: number;
  batchRewardMean: number;
  batchRewardStandardError: number;
  /** 0 = full rollout; t > 0 = suffix resampling from turn t. */
  resampledFromTurn: number;
  delta: number;
  loss: number;
  clipFraction: number;
  gradientNorm: number;
  tokens: number;
  droppedGroups: number;
  /**
   * Present for an agent trained on a Tinker service (docs/method.md §3): its kl, maxTokenKl,
   * penalty, certificate and trajectoryShift rest on the k3 estimate of the token KL from the
   * sampled tokens (absent: exact, full-vocabulary KL).
   */
  klEstimated?: true;
  /** Standard error of that estimated mean token KL (over trajectories). */
  klStandardError?: number | null;
  /** The second-order penalty used ½|r − 1| per token for the exact total variation. */
  totalVariationEstimated?: true;
  /** ½·E_stale|W_{<i} − 1| against the start-of-stage team (null for the first update). */
  occupancyGap: number | null;
  occupancyGapStandardError: number | null;
  /** Change in mean reward to the next fresh batch (paired on the same prompts). */
  measuredImprovement: number | null;
  measuredImprovementStandardError: number | null;
  /**
   * Change in mean reward the update made on the stage's held-out prompts (paired, sampled
   * right before and after it; certificate.heldOutProblems > 0): out of sample, unlike
   * measuredImprovement. Null when held-out measurement is off.
   */
  heldOutImprovement: number | null;
  heldOutImprovementStandardError: number | null;
}

export interface StageRecord {
  type: 'stage';
  stage: number;
  schedule: string;
  generatedTokens: number;
  elapsedSeconds: number;
  rewardBefore: number;
  rewardAfter: number;
  improvement: number;
  improvementStandardError: number;
  /** A drop of the team reward beyond noise (z < −2). */
  regression: boolean;
  certificateSum: number;
  updates: number;
  outOfRegion: number;
  /** Tokens generated to measure updates on held-out prompts (not in the training budget). */
  measurementTokens: number;
}

/** Held-out team accuracy and per-agent turn accuracy (what `teamtr eval` reports). */
export interface EvaluationFigures {
  accuracy: number;
  /** Wilson 95% interval. */
  interval: [number, number];
  count: number;
  meanReward: number;
  /** Per-agent turn accuracy where the task can judge a single turn. */
  agents: Array<{
    agent: string;
    turnAccuracy: number | null;
    interval: [number, number] | null;
    count: number;
  }>;
}

export interface EvaluationRecord extends EvaluationFigures {
  type: 'eval';
  stage: number;
  generatedTokens: number;
}

/**
 * One agent's model replaced before `stage` runs (docs/method.md §6). The three rewards come from
 * batches of the same prompts with common random numbers (paired): the team just before the
 * swap, right after it, and after stage-0 alignment. The dashboard draws it as a marker at
 * (`stage`, `generatedTokens`) on the training curves.
 */
export interface SwapRecord {
  type: 'swap';
  /** The first stage run with the new model. */
  stage: number;
  /** Cumulative generated tokens when the swap began (before its own measurement batches). */
  generatedTokens: number;
  agent: string;
  fromModel: string;
  toModel: string;
  rewardBefore: number;
  rewardBeforeStandardError: number;
  rewardAfterSwap: number;
  rewardAfterSwapStandardError: number;
  /** Null when no alignment ran. */
  rewardAfterAlignment: number | null;
  rewardAfterAlignmentStandardError: number | null;
  /** rewardAfterSwap − rewardBefore, paired per prompt group. */
  shock: number;
  shockStandardError: number;
  alignmentSteps: number;
  /** The objective actually used ('none' without alignment; 'sft' when 'sft+kl' fell back). */
  alignmentMode: 'none' | 'sft' | 'kl' | 'sft+kl';
  /** Why the mode differs from the configured one, if it does. */
  alignmentNote: string | null;
  /** Alignment loss of the first and last step (cross-entropy and/or KL, nats per token). */
  alignmentLossFirst: number | null;
  alignmentLossLast: number | null;
  /** Tokens the alignment's team batches generated. */
  alignmentTokens: number;
  /** Tokens generated by the swap as a whole (measurement batches + alignment). */
  swapTokens: number;
  /** A later stage whose rewardAfter reaches this counts as recovered (rewardBefore − its SE). */
  recoveryThreshold: number;
}

/** The first stage after a swap whose rewardAfter reached the swap's recoveryThreshold. */
export interface SwapRecoveryRecord {
  type: 'swap-recovery';
  /** The stage that recovered. */
  stage: number;
  generatedTokens: number;
  agent: string;
  swapStage: number;
  /** stage − swapStage + 1: stages run with the new model until recovery. */
  stagesToRecover: number;
  threshold: number;
  rewardAfter: number;
}

/** A stage undone because its held-out change was confidently negative (trustRegion.rollback). */
export interface RollbackRecord {
  type: 'rollback';
  stage: number;
  generatedTokens: number;
  /** Σ of the stage's updates' held-out improvements, and its standard error. */
  heldOutChange: number;
  heldOutChangeStandardError: number;
  /** The units set back to their parameters and optimizer state before the stage. */
  agents: string[];
}

export type MetricsRecord =
  UpdateRecord | StageRecord | EvaluationRecord | SwapRecord | SwapRecoveryRecord | RollbackRecord;
