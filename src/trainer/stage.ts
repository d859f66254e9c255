import type { Objective, ObjectiveSettings } from '../rl/index.js';
import type { Problem, Task } from '../tasks/index.js';
import { firstTurnOf, type Team } from '../team/team.js';
import type { TeamBatch } from '../team/types.js';
import { RandomGenerator } from '../util/random.js';
import { certifyUpdate, tokenHorizon } from './certificate/certify.js';
import { OccupancyTracker } from './certificate/occupancy.js';
import { HeldOutPrompts } from './held-out.js';
import { StageRollouts } from './stage-rollout.js';
import { batchWithinBudget, hasWholeGroups } from './token-budget.js';
import {
  updateRecord,
  type AgentUpdate,
  type CertifiedUpdate,
  type ResamplingDecision,
  type UpdateRecord,
} from './update-record.js';
import { unitEngine } from './update/engines.js';
import {
  trustRegionUpdate,
  type TrustRegionResult,
  type TrustRegionSettings,
} from './update/trust-region.js';
import { refuseDivergedUpdate } from './run/divergence.js';
import type { UnitEngine } from './update/engine.js';
import type { TrainableUnit } from './update/units.js';

export type { AgentUpdate, CertifiedUpdate } from './update-record.js';

/** How every stage of a run samples, updates and certifies (resolved once from the config). */
export interface StageSettings {
  schedule: string;
  rollout: { groupSize: number; temperature: number; suffixResampling: boolean };
  updateOrder: 'reverse' | 'fixed' | 'random';
  objective: Objective;
  objectiveSettings: ObjectiveSettings;
  trustRegion: TrustRegionSettings;
  certificate: { epsilon: number; confidence: number };
  /** The lazy schedule's resampling threshold κ (0: always resample; Infinity: never). */
  lazy: { threshold: number };
}

/**
 * Told of the run's progress inside a stage, so that evaluations can stand at fixed counts of
 * generated tokens and of agent updates (evaluation-marks.ts) whatever the schedule.
 */
export interface StageWatch {
  /** A batch brought the run's generated tokens from `before` to `after`, after `updates` updates. */
  sampled(progress: { before: number; after: number; updates: number }): Promise<void>;
  /** The run's `updates`-th agent update is done, `tokens` generated so far. */
  updated(progress: { updates: number; tokens: number }): Promise<void>;
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
  /**
   * The run's generated-token budget: no batch is sampled once it is spent, and the batch that
   * reaches it is cut to the prompts it needs (token-budget.ts). @default no limit
   */
  tokenBudget?: number;
  watch?: StageWatch;
}

/** What a schedule's stage leaves: its first and last batch (same prompts) and its updates. */
export interface StageOutcome {
  /** The stage's first batch (the team before any update of the stage). */
  first: TeamBatch;
  /**
   * A batch on the same prompts from the team after the stage (the prompts of a batch the
   * budget cut, when it cut one).
   */
  last: TeamBatch;
  records: UpdateRecord[];
}

/** How an update of a stage differs from a fresh one (stale schedules). */
export interface UpdateOptions {
  /** Trajectory shifts of units updated after the batch was sampled (the certificate pays). */
  unreflectedShifts?: readonly number[];
  /** Multiply the advantages (the HAPPO-style correction of a stale batch). */
  trajectoryWeights?: Float64Array;
}

/**
 * The operations a schedule composes into a stage (schedules.ts): sample a batch of the
 * stage's prompts, update one unit inside its trust region and certify it, measure the team
 * after the update, and turn the update into its record. Sampling uses the stage's seed for
 * every batch, so consecutive batches differ only through the policies (paired measurements).
 */
export class Stage {
  generatedTokens = 0;
  /** Tokens of the stage's closing batch drawn once the budget is spent (`measure`). */
  private closingTokens = 0;
  /** Drift of the team from the stage's first batch (occupancy gap, HAPPO weights). */
  readonly occupancy = new OccupancyTracker();
  /** Drift of the team from the latest batch sampled (the lazy schedule's batch in hand). */
  private latest: OccupancyTracker = this.occupancy;
  /** The run's token budget was reached within the stage (its last batches may be cut). */
  budgetReached = false;
  private readonly random: RandomGenerator;
  private readonly rollouts: StageRollouts;
  /** The team on the held-out prompts (null: the stage measures nothing out of sample). */
  private readonly heldOut: HeldOutPrompts | null;
  private updates = 0;
  /** The latest update, until `measureUpdate` measured it. */
  private unmeasured: CertifiedUpdate | null = null;

  constructor(
    readonly plan: StagePlan,
    readonly team: Team,
    readonly task: Task,
    readonly units: readonly TrainableUnit[],
    readonly settings: StageSettings,
  ) {
    this.random = new RandomGenerator(`${plan.seed}/updates`);
    this.rollouts = new StageRollouts(team, task, settings.rollout);
    this.heldOut =
      plan.heldOutProblems.length > 0
        ? new HeldOutPrompts(this.rollouts, plan.heldOutProblems, `${plan.seed}/held-out`)
        : null;
  }

  /**
   * Tokens of the batches drawn only to measure (outside the training budget): the held-out
   * batches, and a stage's closing batch once the budget is spent.
   */
  get measurementTokens(): number {
    return this.closingTokens + (this.heldOut?.measurementTokens ?? 0);
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

  /** Whether the run's token budget allows another batch (`sample`); else `measure` closes. */
  get budgetLeft(): boolean {
    return this.remainingTokens() > 0;
  }

  private remainingTokens(): number {
    return (this.plan.tokenBudget ?? Infinity) - this.plan.tokensBefore - this.generatedTokens;
  }

  /**
   * A batch of the stage's prompts from the current team. After `changed` alone was updated,
   * the turns before its first turn keep their distribution, so `previous`'s prefixes are
   * reused when suffix resampling applies (one round, fixed order). The batch that reaches the
   * run's token budget holds only the prompts it needs; check `budgetLeft` first.
   */
  async sample(reuseAfter?: { previous: TeamBatch; changed: TrainableUnit }): Promise<TeamBatch> {
    const before = this.plan.tokensBefore + this.generatedTokens;
    const remaining = this.remainingTokens();
    if (remaining <= 0)
      throw new Error(`stage ${this.plan.stage}: sample() with the token budget spent`);
    const reuse = reuseAfter && {
      previous: reuseAfter.previous,
      changed: reuseAfter.changed.agentIndices,
    };
    const drawn = await this.rollouts.draw(this.plan.problems, this.plan.seed, reuse, {
      // An update of a unit reads π_old from them (update/local/kl-meter.ts checks they are its own), where
      // its engine can; elsewhere decoding's sums differ from scoring's.
      keepHiddenStatesOf: this.units.flatMap((unit) =>
        unitEngine(unit).keepsSampledHiddenStates ? unit.agentIndices : [],
      ),
    });
    const batch = remaining === Infinity ? drawn : batchWithinBudget(drawn, remaining);
    if (batch.generatedTokens >= remaining) this.budgetReached = true;
    this.generatedTokens += batch.generatedTokens;
    this.occupancy.begin(batch);
    this.latest = this.occupancy.batch === batch ? this.occupancy : new OccupancyTracker();
    this.latest.begin(batch);
    await this.plan.watch?.sampled({
      before,
      after: before + batch.generatedTokens,
      updates: this.plan.updatesBefore + this.updates,
    });
    return batch;
  }

  /**
   * A batch of `previous`'s prompts from the team as it is now, drawn only to measure what the
   * stage's updates did, once the token budget is spent (no `budgetLeft`): its tokens count
   * as measurement tokens, outside the budget, and no update uses it. After `changed` alone was
   * updated it regenerates only the suffix, as `sample` does.
   */
  async measure(after: { previous: TeamBatch; changed?: TrainableUnit }): Promise<TeamBatch> {
    const { previous, changed } = after;
    // A batch the budget cut short of a whole group is drawn again in full (the same random
    // streams give its unchanged turns again); a suffix needs whole groups to reuse.
    const batch = await this.rollouts.draw(
      previous.problems,
      this.plan.seed,
      changed && hasWholeGroups(previous) ? { previous, changed: changed.agentIndices } : undefined,
    );
    this.closingTokens += batch.generatedTokens;
    return batch;
  }

  /**
   * How far the team has moved since `batch` was sampled, measured on `batch`: the stage's
   * first batch or the latest one (a schedule holds no other).
   */
  driftSince(batch: TeamBatch): OccupancyTracker {
    if (this.latest.batch === batch) return this.latest;
    if (this.occupancy.batch === batch) return this.occupancy;
    throw new Error('driftSince: the stage tracks only its first and its latest batch');
  }

  /**
   * Updates `unit` on `batch` inside its trust region, refuses a diverged update, certifies it
   * (on the batch, and on the held-out prompts when the stage has them) and moves the stage's
   * occupancy past it. The schedule measures it next (`measureUpdate`), before anything else
   * changes the team.
   */
  async update(
    unit: TrainableUnit,
    batch: TeamBatch,
    options: UpdateOptions = {},
  ): Promise<CertifiedUpdate> {
    if (this.unmeasured)
      throw new Error(
        `stage ${this.plan.stage}: the update of ${this.unmeasured.unit.name} was never measured; a schedule calls stage.measureUpdate after every stage.update (schedules.ts)`,
      );
    const heldOutBefore = this.heldOut ? await this.heldOut.current() : null;
    const engine = unitEngine(unit);
    const heldOut = heldOutBefore ? await engine.holdOut(heldOutBefore) : null;
    const inputs = this.updateInputs(unit, batch, options.trajectoryWeights);
    const result = await trustRegionUpdate(inputs, this.random);
    refuseDivergedUpdate(this.team, unit, {
      stage: this.plan.stage,
      update: this.plan.updatesBefore + this.updates + 1,
    });
    const certificate = certifyUpdate({
      batch,
      result,
      settings: {
        epsilon: this.settings.certificate.epsilon,
        earlierShifts: options.unreflectedShifts ?? [],
        horizon: tokenHorizon(this.team, unit.agentIndices),
      },
      confidence: this.settings.certificate.confidence,
      heldOut:
        heldOutBefore && heldOut ? { batch: heldOutBefore, evidence: await heldOut.after() } : null,
      boundSeed: `${this.plan.seed}/certificate/${this.updates}`,
    });
    const occupancyGap = this.occupancy.gap();
    await this.advanceOccupancy(unit, engine, result);
    this.unmeasured = {
      unit,
      batch,
      result,
      certificate,
      droppedGroups: inputs.droppedGroups,
      index: this.updates++,
      generatedTokens: this.plan.tokensBefore + this.generatedTokens,
      occupancyGap,
    };
    return this.unmeasured;
  }

  /**
   * Measures the team after `update`, the stage's latest: on the held-out prompts (paired with
   * the batch its certificate read), and at the run's evaluation marks (the watch).
   */
  async measureUpdate(update: CertifiedUpdate): Promise<AgentUpdate> {
    if (update !== this.unmeasured)
      throw new Error(
        `stage ${this.plan.stage}: measureUpdate takes the stage's latest update, once (update of ${update.unit.name})`,
      );
    const heldOut = this.heldOut ? await this.heldOut.measureAfter(update.unit.agentIndices) : null;
    this.unmeasured = null;
    await this.plan.watch?.updated({
      updates: this.plan.updatesBefore + this.updates,
      tokens: update.generatedTokens,
    });
    return { ...update, heldOut };
  }

  /** Moves the stage's drift trackers past the update of `unit`. */
  private async advanceOccupancy(
    unit: TrainableUnit,
    engine: UnitEngine,
    result: TrustRegionResult,
  ): Promise<void> {
    const known = result.scoredLogProbs && {
      items: result.tokens.items,
      logProbs: result.scoredLogProbs,
    };
    for (const tracker of new Set([this.occupancy, this.latest]))
      await tracker.advance(unit.agentIndices, engine, known ?? null);
  }

  /**
   * The update's record, with its measured improvement (null when nothing measured it) and the
   * lazy schedule's resampling decision after it (null for the other schedules).
   */
  record(
    update: AgentUpdate,
    measured: { improvement: number; standardError: number } | null,
    resampling: ResamplingDecision | null = null,
  ): UpdateRecord {
    const { stage, updatesBefore } = this.plan;
    return updateRecord(
      { stage, updatesBefore, schedule: this.settings.schedule },
      update,
      measured,
      resampling,
    );
  }

  /**
   * What an update of `unit` on `batch` works from: the objective's advantages (times
   * `trajectoryWeights` when given), the trajectories they keep, and the stage's trust-region
   * settings.
   */
  private updateInputs(unit: TrainableUnit, batch: TeamBatch, trajectoryWeights?: Float64Array) {
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
      droppedGroups: estimate.droppedGroups,
    };
  }
}
