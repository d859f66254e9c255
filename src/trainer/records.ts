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

export interface UpdateRecord {
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
  /** Token-level KL(π_old ‖ π_new) over the agent's tokens (exact, full vocabulary). */
  kl: number;
  maxTokenKl: number;
  inRegion: boolean;
  stepsTaken: number;
  stepsUndone: number;
  lastStepScale: number;
  loss: number;
  clipFraction: number;
  gradientNorm: number;
  tokens: number;
  droppedGroups: number;
  /** Surrogate gain L (unclipped importance-weighted advantage, reward units). */
  surrogate: number;
  surrogateStandardError: number;
  /** 2ε·Σ_k Σ_{j<k} E√(KL_j/2). */
  penalty: number;
  /** Extra term of the sequential-stale schedule (earlier agents' trajectory shift). */
  stalePenalty: number;
  /** Certified lower bound L − penalty − stalePenalty. */
  certificate: number;
  /** Σ over the agent's tokens of E√(KL/2): its own trajectory-level shift. */
  trajectoryShift: number;
  offPolicyEstimate: number;
  offPolicyStandardError: number;
  offPolicyLowerBound: number;
  /** ½·E_stale|W_{<i} − 1| against the start-of-stage team (null for the first update). */
  occupancyGap: number | null;
  occupancyGapStandardError: number | null;
  /** Change in mean reward to the next fresh batch (paired on the same prompts). */
  measuredImprovement: number | null;
  measuredImprovementStandardError: number | null;
  probabilityShiftByRank: RankShiftSummary[];
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
}

export interface EvaluationRecord {
  type: 'eval';
  stage: number;
  generatedTokens: number;
  accuracy: number;
  /** Wilson 95% interval. */
  interval: [number, number];
  count: number;
  meanReward: number;
  /** Per-agent turn accuracy where the task can judge a single turn. */
  agents: Array<{ agent: string; turnAccuracy: number | null; interval: [number, number] | null; count: number }>;
}

export interface SwapRecord {
  type: 'swap';
  stage: number;
  generatedTokens: number;
  agent: string;
  fromModel: string;
  toModel: string;
  rewardBefore: number;
  rewardAfterSwap: number;
  rewardAfterAlignment: number | null;
  alignmentSteps: number;
}

export type MetricsRecord = UpdateRecord | StageRecord | EvaluationRecord | SwapRecord;
