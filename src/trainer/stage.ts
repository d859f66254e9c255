import { sumsInOneOrder } from '../nn/shared-prefix-scoring.js';
import {
  measuredImprovement,
  meanWithStandardError,
  type Objective,
  type ObjectiveSettings,
} from '../rl/index.js';
import type { Problem, Task } from '../tasks/index.js';
import { rollout } from '../team/rollout.js';
import { firstTurnOf, hasSeveralRounds, type Team } from '../team/team.js';
import type { TeamBatch } from '../team/types.js';
import { RandomGenerator } from '../util/random.js';
import { certifyUpdate, tokenHorizon, type UpdateCertificate } from './certificate/certify.js';
import { HeldOutEvidence } from './update/local/certificate-evidence.js';
import { OccupancyTracker } from './certificate/occupancy.js';
import type { UpdateRecord } from './records.js';
import {
  trustRegionUpdate,
  type TrustRegionResult,
  type TrustRegionSettings,
} from './update/trust-region.js';
import type { TinkerUnit, TrainableUnit } from './update/units.js';
import { updateOnService, type ServiceEstimates } from './update/tinker/update.js';

/** How every stage of a run samples, updates and certifies (resolved once from the config). */
export interface StageSettings {
  schedule: string;
  rollout: { groupSize: number; temperature: number; suffixResampling: boolean };
  updateOrder: 'reverse' | 'fixed' | 'random';
  objective: Objective;
  objectiveSettings: ObjectiveSettings;
  trustRegion: TrustRegionSettings;
  certificate: { epsilon: number; confidence: number };
}

/** What is particular to one stage. */
export interface StagePlan {
  stage: number;
  /** Every random stream of the stage derives from it (resume repeats the stage bit for bit). */
  seed: string;
  /** The prompts of every batch of the stage (common random numbers across its batches). */
  problems: Problem[];
  /** Other prompts on which each update is measured out of sample (empty: not measured). */
  heldOutProblems: Problem[];
  /** Generated tokens and updates of the run before this stage. */
  tokensBefore: number;
  updatesBefore: number;
}

/** One agent's trust-region update and its certificate, before it is measured. */
export interface AgentUpdate {
  unit: TrainableUnit;
  batch: TeamBatch;
  /** Position within the stage. */
  index: number;
  /** The run's generated tokens when the update was made. */
  generatedTokens: number;
  result: TrustRegionResult;
  certificate: UpdateCertificate;
  occupancyGap: { gap: number; standardError: number } | null;
  /** The update's paired reward change on the held-out prompts (null when not measured). */
  heldOut: { improvement: number; standardError: number } | null;
  droppedGroups: number;
  /** A unit on a Tinker service: which of its quantities are estimates. */
  estimates?: ServiceEstimates;
}

/** What a schedule's stage leaves: its first and last batch (same prompts) and its updates. */
export interface StageOutcome {
  /** The stage's first batch (the team before any update of the stage). */
  first: TeamBatch;
  /** A batch on the same prompts from the team after the stage. */
  last: TeamBatch;
  records: UpdateRecord[];
}

/**
 * The operations a schedule composes into a stage (schedules.ts): sample a batch of the
 * stage's prompts, update one unit inside its trust region and certify it, and turn the update
 * into its record once it is measured. Sampling uses the stage's seed for every batch, so
 * consecutive batches differ only through the policies (paired measurements).
 */
export class Stage {
  generatedTokens = 0;
  /** Tokens of the held-out measurement batches (outside the training budget). */
  measurementTokens = 0;
  /** Drift of the team from the stage's first batch (occupancy gap, HAPPO weights). */
  readonly occupancy = new OccupancyTracker();
  private readonly random: RandomGenerator;
  private updates = 0;
  /** The latest batch of the held-out prompts: the team as it is now. */
  private heldOutBatch: TeamBatch | null = null;

  constructor(
    readonly plan: StagePlan,
    readonly team: Team,
    readonly task: Task,
    readonly units: readonly TrainableUnit[],
    readonly settings: StageSettings,
  ) {
    this.random = new RandomGenerator(`${plan.seed}/updates`);
  }

  /** Units in the order this stage updates them (by first turn, reversed, or shuffled). */
  updateOrder(): TrainableUnit[] {
    const { protocol } = this.team;
    const firstTurn = (unit: TrainableUnit) =>
      Math.min(...unit.agentIndices.map((index) => firstTurnOf(protocol, index)));
    const byTurn = [...this.units].sort((a, b) => firstTurn(a) - firstTurn(b));
    if (this.settings.updateOrder === 'fixed') return byTurn;
    if (this.settings.updateOrder === 'reverse') return byTurn.reverse();
    return this.random.shuffle(byTurn);
  }

  /**
   * A batch of the stage's prompts from the current team. After `changed` alone was updated,
   * the turns before its first turn keep their distribution, so `previous`'s prefixes are
   * reused when suffix resampling applies (one round, fixed order).
   */
  async sample(reuseAfter?: { previous: TeamBatch; changed: TrainableUnit }): Promise<TeamBatch> {
    const fromTurn = reuseAfter ? this.suffixStart(reuseAfter.changed) : null;
    const batch = await rollout({
      team: this.team,
      task: this.task,
      problems: this.plan.problems,
      groupSize: this.settings.rollout.groupSize,
      seed: this.plan.seed,
      temperature: this.settings.rollout.temperature,
      reuse:
        reuseAfter && fromTurn !== null ? { previous: reuseAfter.previous, fromTurn } : undefined,
      // An update of a unit reads π_old from them (kl-meter.ts checks they are its own), where
      // its products sum in one order; elsewhere decoding's sums differ from scoring's.
      keepHiddenStatesOf: this.units.flatMap((unit) =>
        unit.kind !== 'tinker' && sumsInOneOrder(unit.model) ? unit.agentIndices : [],
      ),
    });
    this.generatedTokens += batch.generatedTokens;
    this.occupancy.begin(batch);
    return batch;
  }

  /**
   * What an update of `unit` on `batch` works from: the objective's advantages (times
   * `trajectoryWeights` when given), the trajectories they keep, and the stage's trust-region
   * settings and random stream.
   */
  private updateInputs<Unit extends TrainableUnit>(
    unit: Unit,
    batch: TeamBatch,
    trajectoryWeights?: Float64Array,
  ) {
    const estimate = this.settings.objective.advantages({
      rewards: batch.trajectories.map((trajectory) => trajectory.reward),
      problemIds: batch.trajectories.map((trajectory) => trajectory.problemIndex),
      agentActs: batch.trajectories.map((trajectory) =>
        trajectory.turns.some((turn) => unit.agentIndices.includes(turn.agentIndex)) ? 1 : 0,
      ),
      settings: this.settings.objectiveSettings,
    });
    return {
      unit,
      batch,
      advantages: trajectoryWeights
        ? estimate.advantages.map((value, index) => value * trajectoryWeights[index]!)
        : estimate.advantages,
      trajectories: estimate.keptTrajectories,
      settings: this.settings.trustRegion,
      random: this.random,
      droppedGroups: estimate.droppedGroups,
    };
  }

  /**
   * Updates `unit` on `batch` inside its trust region and certifies the update.
   * `unreflectedShifts`: trajectory shifts of units updated after `batch` was sampled (a stale
   * batch; the certificate pays for them). `trajectoryWeights` multiply the advantages (the
   * HAPPO-style correction of a stale batch).
   */
  async update(
    unit: TrainableUnit,
    batch: TeamBatch,
    options: { unreflectedShifts?: readonly number[]; trajectoryWeights?: Float64Array } = {},
  ): Promise<AgentUpdate> {
    const { settings } = this;
    const heldOutBefore = await this.heldOutTeamBatch();
    if (unit.kind === 'tinker') return this.updateOnService(unit, batch, heldOutBefore, options);
    const heldOutEvidence = heldOutBefore
      ? new HeldOutEvidence(unit.model, heldOutBefore, unit.agentIndices)
      : null;
    const inputs = this.updateInputs(unit, batch, options.trajectoryWeights);
    const result = trustRegionUpdate(inputs);
    const certificate = certifyUpdate({
      batch,
      result,
      settings: this.certificateSettings(unit, options.unreflectedShifts),
      confidence: settings.certificate.confidence,
      heldOut: heldOutEvidence
        ? { batch: heldOutEvidence.batch, evidence: heldOutEvidence.after() }
        : null,
    });
    return this.measured(
      { unit, batch, result, certificate, droppedGroups: inputs.droppedGroups },
      heldOutBefore,
      () =>
        this.occupancy.advance(
          unit,
          result.scoredLogProbs
            ? { items: result.tokens.items, logProbs: result.scoredLogProbs }
            : null,
        ),
    );
  }

  /** The certificate's settings for an update of `unit` (its horizon, the unreflected shifts). */
  private certificateSettings(unit: TrainableUnit, unreflectedShifts?: readonly number[]) {
    return {
      epsilon: this.settings.certificate.epsilon,
      earlierShifts: unreflectedShifts ?? [],
      horizon: tokenHorizon(this.team, unit.agentIndices),
    };
  }

  /**
   * An update made and certified: its occupancy gap (before the tracker advances past it), its
   * place in the stage, and its held-out improvement, measured on a fresh held-out batch.
   */
  private async measured(
    update: Pick<
      AgentUpdate,
      'unit' | 'batch' | 'result' | 'certificate' | 'droppedGroups' | 'estimates'
    >,
    heldOutBefore: TeamBatch | null,
    advanceOccupancy: () => void | Promise<void>,
  ): Promise<AgentUpdate> {
    const occupancyGap = this.occupancy.gap();
    await advanceOccupancy();
    const index = this.updates++;
    const generatedTokens = this.plan.tokensBefore + this.generatedTokens;
    const heldOutAfter = heldOutBefore ? await this.heldOutTeamBatch(update.unit) : null;
    return {
      ...update,
      index,
      generatedTokens,
      occupancyGap,
      heldOut:
        heldOutBefore && heldOutAfter ? pairedImprovement(heldOutBefore, heldOutAfter) : null,
    };
  }

  /**
   * The team on the held-out prompts: the stored batch, or (after `changed` was updated) a new
   * one paired with it (same prompts and random streams, prefix reused as in `sample`). Null
   * when the stage measures nothing out of sample.
   */
  private async heldOutTeamBatch(changed?: TrainableUnit): Promise<TeamBatch | null> {
    if (this.plan.heldOutProblems.length === 0) return null;
    if (this.heldOutBatch && !changed) return this.heldOutBatch;
    const previous = this.heldOutBatch;
    const fromTurn = previous && changed ? this.suffixStart(changed) : null;
    const batch = await rollout({
      team: this.team,
      task: this.task,
      problems: this.plan.heldOutProblems,
      groupSize: this.settings.rollout.groupSize,
      seed: `${this.plan.seed}/held-out`,
      temperature: this.settings.rollout.temperature,
      reuse: previous && fromTurn !== null ? { previous, fromTurn } : undefined,
    });
    this.measurementTokens += batch.generatedTokens;
    this.heldOutBatch = batch;
    return batch;
  }

  /** The update's record, with its measured improvement (null when nothing measured it). */
  record(
    update: AgentUpdate,
    measured: { improvement: number; standardError: number } | null,
  ): UpdateRecord {
    const { result } = update;
    const rewards = meanWithStandardError(
      update.batch.trajectories.map((trajectory) => trajectory.reward),
    );
    return {
      type: 'update',
      stage: this.plan.stage,
      updateIndex: update.index,
      globalUpdate: this.plan.updatesBefore + update.index,
      schedule: this.settings.schedule,
      agent: update.unit.name,
      generatedTokens: update.generatedTokens,
      batchRewardMean: rewards.mean,
      batchRewardStandardError: rewards.standardError,
      resampledFromTurn: update.batch.resampledFromTurn,
      delta: update.unit.delta,
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
      droppedGroups: update.droppedGroups,
      ...update.estimates,
      ...update.certificate,
      occupancyGap: update.occupancyGap ? update.occupancyGap.gap : null,
      occupancyGapStandardError: update.occupancyGap ? update.occupancyGap.standardError : null,
      measuredImprovement: measured ? measured.improvement : null,
      measuredImprovementStandardError: measured ? measured.standardError : null,
      heldOutImprovement: update.heldOut ? update.heldOut.improvement : null,
      heldOutImprovementStandardError: update.heldOut ? update.heldOut.standardError : null,
    };
  }

  /**
   * `update` for a unit on a Tinker service (tinker-agent/update.ts): the same steps and
   * measurements, its KL and the penalties built on it estimated from the sampled tokens.
   */
  private async updateOnService(
    unit: TinkerUnit,
    batch: TeamBatch,
    heldOutBefore: TeamBatch | null,
    options: { unreflectedShifts?: readonly number[]; trajectoryWeights?: Float64Array },
  ): Promise<AgentUpdate> {
    const { settings } = this;
    const inputs = this.updateInputs(unit, batch, options.trajectoryWeights);
    const { result, certificate, estimates } = await updateOnService({
      ...inputs,
      certificate: this.certificateSettings(unit, options.unreflectedShifts),
      confidence: settings.certificate.confidence,
      heldOut: heldOutBefore,
    });
    return this.measured(
      { unit, batch, result, certificate, droppedGroups: inputs.droppedGroups, estimates },
      heldOutBefore,
      () => this.occupancy.advanceWith(unit, (items) => unit.agent.completionLogProbs(items)),
    );
  }

  /** First turn to resample after `changed` was updated, or null when a full resample is needed. */
  private suffixStart(changed: TrainableUnit): number | null {
    const { protocol } = this.team;
    if (
      !this.settings.rollout.suffixResampling ||
      hasSeveralRounds(protocol) ||
      protocol.permutePerEpisode
    )
      return null;
    const turns = changed.agentIndices
      .map((index) => firstTurnOf(protocol, index))
      .filter((turn) => turn >= 0);
    return turns.length > 0 ? Math.min(...turns) : null;
  }
}

/** Change in mean reward between two batches of the same prompts, paired per prompt group. */
export function pairedImprovement(
  before: TeamBatch,
  after: TeamBatch,
): { improvement: number; standardError: number } {
  const result = measuredImprovement({
    rewardsBefore: before.trajectories.map((trajectory) => trajectory.reward),
    rewardsAfter: after.trajectories.map((trajectory) => trajectory.reward),
    paired: true,
    groupIdsBefore: before.trajectories.map((trajectory) => trajectory.problemIndex),
    groupIdsAfter: after.trajectories.map((trajectory) => trajectory.problemIndex),
  });
  return { improvement: result.improvement, standardError: result.standardError };
}
