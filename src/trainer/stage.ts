import {
  grpoAdvantages,
  agentWiseNormalize,
  dynamicSamplingFilter,
  measuredImprovement,
  meanWithStandardError,
  occupancyGap,
} from '../rl/index.js';
import { scoreToArrays } from '../nn/score.js';
import type { Problem, Task } from '../tasks/index.js';
import { rollout } from '../team/rollout.js';
import { firstTurnOf, hasSeveralRounds, type Team } from '../team/team.js';
import type { TeamBatch } from '../team/types.js';
import { RandomGenerator } from '../util/random.js';
import { certifyUpdate } from './certify.js';
import type { ObjectiveSettings } from './objectives.js';
import type { UpdateRecord } from './records.js';
import { collectUnitTokens } from './token-grid.js';
import { trustRegionUpdate, type TrustRegionSettings, type UpdateUnit } from './trust-region.js';

/** Everything a schedule needs to run one stage; the schedule decides the order of calls. */
export interface StageEnvironment {
  stage: number;
  schedule: string;
  team: Team;
  task: Task;
  units: UpdateUnit[];
  problems: Problem[];
  groupSize: number;
  temperature: number;
  suffixResampling: boolean;
  updateOrder: 'reverse' | 'fixed' | 'random';
  objective: ObjectiveSettings;
  trustRegion: TrustRegionSettings;
  epsilon: number;
  confidence: number;
  seed: string;
  random: RandomGenerator;
  /** Generated tokens before this stage. */
  tokensBefore: number;
  /** Update count before this stage. */
  updatesBefore: number;
}

/**
 * The operations of one stage, shared by every schedule: sample a batch (with common random
 * numbers across the stage's batches, optionally reusing an unchanged prefix), update one
 * unit inside its trust region and certify it, and measure improvements between batches.
 */
export class StageRunner {
  generatedTokens = 0;
  readonly records: UpdateRecord[] = [];
  /** Batch sampled by the team at the start of the stage (for the occupancy gap). */
  private startBatch: TeamBatch | null = null;
  /** Per trajectory of startBatch: Σ log(π_current/π_start) over units updated so far. */
  private startLogRatio: Float64Array | null = null;
  private readonly updatedShifts: number[] = [];

  constructor(readonly environment: StageEnvironment) {}

  /** Units in the order this stage updates them. */
  orderedUnits(): UpdateUnit[] {
    const { units, team, updateOrder, random } = this.environment;
    const firstTurn = (unit: UpdateUnit) =>
      Math.min(...unit.agentIndices.map((index) => firstTurnOf(team.protocol, index)));
    const byTurn = [...units].sort((a, b) => firstTurn(a) - firstTurn(b));
    if (updateOrder === 'fixed') return byTurn;
    if (updateOrder === 'reverse') return byTurn.reverse();
    return random.shuffle(byTurn);
  }

  async sample(reuseAfter?: { previous: TeamBatch; changed: UpdateUnit }): Promise<TeamBatch> {
    const { team, task, problems, groupSize, seed, temperature } = this.environment;
    const fromTurn = reuseAfter ? this.suffixStart(reuseAfter.changed) : null;
    const batch = await rollout({
      team,
      task,
      problems,
      groupSize,
      seed,
      temperature,
      reuse:
        reuseAfter && fromTurn !== null ? { previous: reuseAfter.previous, fromTurn } : undefined,
    });
    this.generatedTokens += batch.generatedTokens;
    if (!this.startBatch) {
      this.startBatch = batch;
      this.startLogRatio = new Float64Array(batch.trajectories.length);
    }
    return batch;
  }

  /** First turn to resample after `changed` was updated, or null when a full resample is needed. */
  private suffixStart(changed: UpdateUnit): number | null {
    const { team, suffixResampling } = this.environment;
    if (!suffixResampling || hasSeveralRounds(team.protocol) || team.protocol.permutePerEpisode)
      return null;
    const turns = changed.agentIndices
      .map((index) => firstTurnOf(team.protocol, index))
      .filter((turn) => turn >= 0);
    return turns.length > 0 ? Math.min(...turns) : null;
  }

  /** Per-trajectory loss advantages under the objective (GRPO, Dr. MAS, dynamic sampling). */
  private advantages(
    batch: TeamBatch,
    unit: UpdateUnit,
    correctForEarlierAgents: boolean,
  ): { advantages: Float64Array; trajectories: number[]; droppedGroups: number } {
    const { objective } = this.environment;
    const rewards = batch.trajectories.map((trajectory) => trajectory.reward);
    const groupIds = batch.trajectories.map((trajectory) =>
      objective.groupBaseline ? trajectory.problemIndex : 0,
    );
    let advantages = grpoAdvantages({
      rewards,
      groupIds,
      normalizeStd: true,
      leaveOneOut: objective.leaveOneOut,
    }).advantages;
    if (objective.agentWiseNormalization) {
      const acts = batch.trajectories.map((trajectory) =>
        trajectory.turns.some((turn) => unit.agentIndices.includes(turn.agentIndex)) ? 1 : 0,
      );
      advantages = agentWiseNormalize({ values: advantages, agentIds: acts }).normalized;
    }
    if (correctForEarlierAgents && batch === this.startBatch && this.startLogRatio) {
      // HAPPO-style sequential update on a stale batch: weight each trajectory by the likelihood
      // ratio W_{<i} of the agents already updated this stage (clipped to [1/2, 2] for variance),
      // so agent i optimizes against its predecessors' new policies — but on their old contexts.
      const ratios = this.startLogRatio;
      advantages = advantages.map(
        (value, index) => value * Math.min(2, Math.max(0.5, Math.exp(ratios[index]!))),
      );
    }
    let trajectories = batch.trajectories.map((_trajectory, index) => index);
    let droppedGroups = 0;
    if (objective.dynamicSampling) {
      const filter = dynamicSamplingFilter({
        rewards,
        groupIds: batch.trajectories.map((trajectory) => trajectory.problemIndex),
      });
      trajectories = Array.from(filter.keptIndices);
      droppedGroups = filter.droppedGroupCount;
    }
    return { advantages, trajectories, droppedGroups };
  }

  /** Updates one unit on `batch` inside its trust region, certifies it, and records it. */
  /**
   * `stale`: the batch predates earlier updates of this stage (the certificate then pays for
   * their shift). `correctForEarlierAgents`: reweight the stale batch by their likelihood ratio.
   */
  update(
    unit: UpdateUnit,
    batch: TeamBatch,
    options: { stale: boolean; correctForEarlierAgents?: boolean },
  ): UpdateRecord {
    const environment = this.environment;
    const { advantages, trajectories, droppedGroups } = this.advantages(
      batch,
      unit,
      options.correctForEarlierAgents ?? false,
    );
    const result = trustRegionUpdate({
      unit,
      batch,
      advantages,
      trajectories,
      settings: environment.trustRegion,
      random: environment.random,
    });
    const certified = certifyUpdate({
      batch,
      result,
      epsilon: environment.epsilon,
      confidence: environment.confidence,
      earlierShifts: options.stale ? this.updatedShifts : [],
      vocab: unit.model.config.vocabSize,
    });
    const gap =
      this.records.length > 0 && this.startLogRatio
        ? occupancyGap({ logRatioEarlierAgents: this.startLogRatio })
        : null;
    this.updatedShifts.push(certified.trajectoryShift);
    this.accumulateStartLogRatio(unit);
    const rewards = meanWithStandardError(
      batch.trajectories.map((trajectory) => trajectory.reward),
    );
    const record: UpdateRecord = {
      type: 'update',
      stage: environment.stage,
      updateIndex: this.records.length,
      globalUpdate: environment.updatesBefore + this.records.length,
      schedule: environment.schedule,
      agent: unit.name,
      generatedTokens: environment.tokensBefore + this.generatedTokens,
      batchRewardMean: rewards.mean,
      batchRewardStandardError: rewards.standardError,
      resampledFromTurn: batch.resampledFromTurn,
      delta: unit.delta,
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
      droppedGroups,
      ...certified,
      occupancyGap: gap ? gap.gap : null,
      occupancyGapStandardError: gap ? gap.standardError : null,
      measuredImprovement: null,
      measuredImprovementStandardError: null,
    };
    this.records.push(record);
    return record;
  }

  /** After `unit`'s update: Σ log(π_new/π_start) of its tokens in the start batch. */
  private accumulateStartLogRatio(unit: UpdateUnit): void {
    if (!this.startBatch || !this.startLogRatio) return;
    const tokens = collectUnitTokens(this.startBatch, unit.agentIndices);
    if (tokens.totalTokens === 0) return;
    const scores = scoreToArrays(unit.model, tokens.items);
    let itemIndex = 0;
    tokens.rowTrajectories.forEach((trajectoryIndex) => {
      const turns = this.startBatch!.trajectories[trajectoryIndex]!.turns.filter((turn) =>
        unit.agentIndices.includes(turn.agentIndex),
      );
      for (const turn of turns) {
        const fresh = scores[itemIndex++]!.logProbs;
        turn.logProbs.forEach((old, offset) => {
          this.startLogRatio![trajectoryIndex]! += fresh[offset]! - old;
        });
      }
    });
  }

  /** Fills the measured improvement of `record` from two batches on the same prompts. */
  measure(record: UpdateRecord, before: TeamBatch, after: TeamBatch): void {
    const measured = pairedImprovement(before, after);
    record.measuredImprovement = measured.improvement;
    record.measuredImprovementStandardError = measured.standardError;
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
