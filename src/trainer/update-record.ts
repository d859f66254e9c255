import { meanWithStandardError, type OccupancyGapEstimate } from '../rl/index.js';
import type { TeamBatch } from '../team/types.js';
import type { UpdateCertificate } from './certificate/certify.js';
import type { TrustRegionOutcome, TrustRegionResult } from './update/trust-region.js';
import type { TrainableUnit } from './update/units.js';

/** One agent's update as metrics.jsonl records it (updateRecord). */
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
  /**
   * Prompts and trajectories in the update's batch: rollout.problemsPerBatch × groupSize,
   * fewer in the batch the run's token budget cut (the run's last). Absent in older runs.
   */
  batchPrompts?: number;
  batchTrajectories?: number;
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
  /**
   * TV between the trajectories of the start-of-stage team and of the team this update acts
   * in, estimated as mean (1 − W_{<i})_+ over the stage's first batch: unbiased and in [0, 1]
   * (rl/occupancy-gap.ts). Null for the stage's first update.
   */
  occupancyGap: number | null;
  occupancyGapStandardError: number | null;
  /** Its two-sided 95% empirical-Bernstein interval, within [0, 1]. Absent in older runs. */
  occupancyGapInterval?: [number, number] | null;
  /** The lazy schedule's decision after this update (null under the other schedules). */
  resampling?: ResamplingDecision | null;
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

/**
 * What the lazy schedule decided after an update (schedules.ts, docs/method.md §11): keep the
 * batch in hand for the next update, or sample a fresh one.
 */
export interface ResamplingDecision {
  /** The next update gets a fresh batch. */
  resampled: boolean;
  /** TV̂ between the team that sampled the batch in hand and the team now (mean (1 − W)_+). */
  totalVariation: number;
  totalVariationInterval: [number, number];
  /** m: Σ over the updated agent's tokens of its token TV, mean over trajectories. */
  stepTotalVariation: number;
  /** Kish's effective sample size of W over the batch in hand, as a share of its trajectories. */
  effectiveSampleSize: number;
  /** 2ε·TV̂·m: what keeping the batch would add to the next update's certificate (an estimate). */
  staleTerm: number;
  /** The update's certificate slack: its second-order certificate without stale term, floored at 0. */
  slack: number;
  /** κ: keep while staleTerm < κ·slack ("infinity": always keep). */
  threshold: number | 'infinity';
}

/** One agent's trust-region update and its certificate, before it is measured (Stage.update). */
export interface CertifiedUpdate {
  unit: TrainableUnit;
  batch: TeamBatch;
  /** Position within the stage. */
  index: number;
  /** The run's generated tokens when the update was made. */
  generatedTokens: number;
  result: TrustRegionResult;
  certificate: UpdateCertificate;
  occupancyGap: OccupancyGapEstimate | null;
  droppedGroups: number;
}

/** An update once the team after it was measured out of sample (Stage.measureUpdate). */
export interface AgentUpdate extends CertifiedUpdate {
  /** The update's paired reward change on the held-out prompts (null when not measured). */
  heldOut: { improvement: number; standardError: number } | null;
}

/** Where an update sits in the run. */
export interface UpdatePosition {
  stage: number;
  /** Updates of the run before this stage. */
  updatesBefore: number;
  schedule: string;
}

/** The update's record, with its measured improvement (null when nothing measured it). */
export function updateRecord(
  position: UpdatePosition,
  update: AgentUpdate,
  measured: { improvement: number; standardError: number } | null,
  resampling: ResamplingDecision | null = null,
): UpdateRecord {
  return {
    ...context(position, update),
    ...steps(update.result),
    droppedGroups: update.droppedGroups,
    ...update.result.estimates,
    ...update.certificate,
    occupancyGap: update.occupancyGap ? update.occupancyGap.gap : null,
    occupancyGapStandardError: update.occupancyGap ? update.occupancyGap.standardError : null,
    occupancyGapInterval: update.occupancyGap ? update.occupancyGap.interval : null,
    resampling,
    measuredImprovement: measured ? measured.improvement : null,
    measuredImprovementStandardError: measured ? measured.standardError : null,
    heldOutImprovement: update.heldOut ? update.heldOut.improvement : null,
    heldOutImprovementStandardError: update.heldOut ? update.heldOut.standardError : null,
  };
}

/** Which update of which agent, on what batch, with what radius. */
function context(position: UpdatePosition, update: AgentUpdate) {
  const rewards = meanWithStandardError(
    update.batch.trajectories.map((trajectory) => trajectory.reward),
  );
  return {
    type: 'update' as const,
    stage: position.stage,
    updateIndex: update.index,
    globalUpdate: position.updatesBefore + update.index,
    schedule: position.schedule,
    agent: update.unit.name,
    generatedTokens: update.generatedTokens,
    batchRewardMean: rewards.mean,
    batchRewardStandardError: rewards.standardError,
    resampledFromTurn: update.batch.resampledFromTurn,
    batchPrompts: update.batch.problems.length,
    batchTrajectories: update.batch.trajectories.length,
    delta: update.unit.delta,
  };
}

/** Where the trust-region update ended and how it got there. */
function steps(result: TrustRegionResult) {
  return {
    kl: result.kl,
    maxTokenKl: result.maxTokenKl,
    inRegion: result.inRegion,
    stepsTaken: result.stepsTaken,
    stepsUndone: result.stepsUndone,
    lastStepScale: result.lastStepScale,
    loss: result.lossMean,
    clipFraction: result.clipFraction,
    gradientNorm: result.gradientNorm,
    tokens: result.tokens.totalTokens,
  };
}
