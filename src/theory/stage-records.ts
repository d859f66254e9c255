import type { PositionAdvantageBound, PositionShift, UpdateCertificate } from './certificate.js';
import type { TighterCertificates } from './certificate-bounds.js';
import {
  expectation,
  expectedSqrtHalf,
  perStateKl,
  policyAdvantage,
  tokenLevelKl,
  totalVariation,
  type ExactAnalysis,
} from './exact.js';
import type { TabularGame } from './game.js';
import type { PositionTable, TeamPolicy } from './policy.js';
import type { TrustRegionStep } from './trust-region.js';

/**
 * One stage of updates in a tabular game under each schedule of docs/method.md §4, computed exactly.
 * In the exact setting "sampling a batch from team μ" means using μ's occupancy d^μ and
 * advantages A^μ; the schedules differ only in which team that is for each update:
 *   teamtr            the current intermediate team (resampled before every update),
 *   sequential-stale  the team at the start of the stage, for every update,
 *   joint             the start-of-stage team, every agent updated at once (one update).
 * Every update records its surrogate L, its true improvement J(after) − J(before) measured from
 * the team it is actually applied to, and its certificate (certificate.ts).
 */
export interface StageInput {
  readonly game: TabularGame;
  /** The team at the start of the stage. */
  readonly team: TeamPolicy;
  /** Token-level KL δ of every agent's step. */
  readonly delta: number;
  /** The order in which agents are updated (sequential schedules). */
  readonly order: readonly number[];
}

export interface AgentStepRecord {
  readonly agent: number;
  /** η of π_new ∝ π_old · exp(η A). */
  readonly stepSize: number;
  /** Token-level KL under the occupancy the step was computed with (= δ when reached). */
  readonly tokenKl: number;
  /** Token-level KL under the occupancy of the team the step is applied to. */
  readonly tokenKlOnAppliedTeam: number;
  readonly reachedDelta: boolean;
}

export interface UpdateRecord {
  /** The agents changed by this update (one, or all for `joint`). */
  readonly agents: readonly number[];
  readonly steps: readonly AgentStepRecord[];
  readonly returnBefore: number;
  readonly returnAfter: number;
  /** J(after) − J(before). */
  readonly trueImprovement: number;
  /** |trueImprovement − surrogate|. */
  readonly surrogateError: number;
  /**
   * Occupancy gap (docs/method.md §5): total variation between the contexts the updated agent sees
   * at its first token under the team the step was computed from and under the team it is
   * applied to. Zero for fresh occupancy and for the joint step.
   */
  readonly occupancyGap: number;
  readonly certificate: UpdateCertificate;
  /** The same update's tighter certificates (certificate-bounds.ts), all exact. */
  readonly tighterCertificates: TighterCertificates;
}

export interface StageResult {
  readonly schedule: string;
  readonly updates: readonly UpdateRecord[];
  readonly returnBefore: number;
  readonly returnAfter: number;
  readonly team: TeamPolicy;
}

export interface StageSchedule {
  readonly name: string;
  readonly description: string;
  runStage(input: StageInput): StageResult;
}

export interface MeasuredChange {
  readonly surrogate: number;
  readonly advantageBound: number;
  readonly shifts: PositionShift[];
  readonly policyAdvantageBounds: PositionAdvantageBound[];
}

/**
 * L, ε, S_m and ε'_h of a change at `positions`, all under the reference team's occupancy and
 * advantages (certificate.ts has the notation).
 */
export function measureChange(
  game: TabularGame,
  reference: ExactAnalysis,
  oldTeam: TeamPolicy,
  newTables: ReadonlyMap<number, PositionTable>,
  positions: readonly number[],
): MeasuredChange {
  let surrogate = 0;
  let advantageBound = 0;
  const shifts: PositionShift[] = [];
  const policyAdvantageBounds: PositionAdvantageBound[] = [];
  for (const position of positions) {
    const newTable = newTables.get(position)!;
    const occupancy = reference.occupancy[position]!;
    const gain = policyAdvantage(newTable, reference.advantages[position]!, game.vocabularySize);
    surrogate += expectation(occupancy, gain);
    let bound = 0;
    for (const value of gain) bound = Math.max(bound, Math.abs(value));
    advantageBound = Math.max(advantageBound, bound);
    policyAdvantageBounds.push({ position, bound });
    const kl = perStateKl(oldTeam.tables[position]!, newTable, game.vocabularySize);
    shifts.push({ position, shift: expectedSqrtHalf(occupancy, kl) });
  }
  return { surrogate, advantageBound, shifts, policyAdvantageBounds };
}

/** What one sequential update's record is made from; the picked fields it keeps as they are. */
export interface SequentialUpdateParts extends Pick<
  UpdateRecord,
  'returnBefore' | 'returnAfter' | 'certificate' | 'tighterCertificates'
> {
  readonly game: TabularGame;
  readonly agent: number;
  readonly positions: readonly number[];
  readonly step: TrustRegionStep;
  readonly current: TeamPolicy;
  readonly next: TeamPolicy;
  /** The occupancy the step was computed under. */
  readonly referenceOccupancy: readonly Float64Array[];
  /** The occupancy of the team the step is applied to. */
  readonly appliedOccupancy: readonly Float64Array[];
  readonly surrogate: number;
}

export function recordUpdate(parts: SequentialUpdateParts): UpdateRecord {
  const { game, agent, positions, step, current, next, returnBefore, returnAfter } = parts;
  const firstPosition = positions[0]!;
  return {
    agents: [agent],
    steps: [
      {
        agent,
        stepSize: step.stepSize,
        tokenKl: step.tokenKl,
        tokenKlOnAppliedTeam: tokenLevelKl(game, parts.appliedOccupancy, current, next, positions),
        reachedDelta: step.reachedDelta,
      },
    ],
    returnBefore,
    returnAfter,
    trueImprovement: returnAfter - returnBefore,
    surrogateError: Math.abs(returnAfter - returnBefore - parts.surrogate),
    occupancyGap: totalVariation(
      parts.appliedOccupancy[firstPosition]!,
      parts.referenceOccupancy[firstPosition]!,
    ),
    certificate: parts.certificate,
    tighterCertificates: parts.tighterCertificates,
  };
}

export function checkOrder(game: TabularGame, order: readonly number[]): void {
  for (const agent of order) {
    if (!Number.isInteger(agent) || agent < 0 || agent >= game.agentCount) {
      throw new RangeError(
        `update order names agent ${agent}; agents are 0 … ${game.agentCount - 1}`,
      );
    }
  }
}
