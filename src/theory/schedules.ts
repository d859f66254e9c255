import {
  computeCertificate,
  type PositionAdvantageBound,
  type PositionShift,
  type UpdateCertificate,
} from './certificate.js';
import { computeTighterCertificates, type TighterCertificates } from './certificate-bounds.js';
import {
  analyzeTeam,
  computeOccupancy,
  expectation,
  expectedReturnOf,
  expectedSqrtHalf,
  perStateKl,
  policyAdvantage,
  tokenLevelKl,
  totalVariation,
  type ExactAnalysis,
} from './exact.js';
import { positionsOf, type TabularGame } from './game.js';
import { withTables, type PositionTable, type TeamPolicy } from './policy.js';
import { trustRegionStep, type TrustRegionStep } from './trust-region.js';

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

interface MeasuredChange {
  readonly surrogate: number;
  readonly advantageBound: number;
  readonly shifts: PositionShift[];
  readonly policyAdvantageBounds: PositionAdvantageBound[];
}

/**
 * L, ε, S_m and ε'_h of a change at `positions`, all under the reference team's occupancy and
 * advantages (certificate.ts has the notation).
 */
function measureChange(
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

interface SequentialUpdateParts {
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
  readonly returnBefore: number;
  readonly returnAfter: number;
  readonly surrogate: number;
  readonly certificate: UpdateCertificate;
  readonly tighterCertificates: TighterCertificates;
}

function recordUpdate(parts: SequentialUpdateParts): UpdateRecord {
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

function checkOrder(game: TabularGame, order: readonly number[]): void {
  for (const agent of order) {
    if (!Number.isInteger(agent) || agent < 0 || agent >= game.agentCount) {
      throw new RangeError(
        `update order names agent ${agent}; agents are 0 … ${game.agentCount - 1}`,
      );
    }
  }
}

/**
 * A sequential stage. `resampleEveryUpdate` picks the reference team: the current one (fresh
 * occupancy) or the start-of-stage one (stale). U, the earlier-changed positions that enter the
 * stale certificate, are the positions where the current team differs from the reference.
 */
function runSequentialStage(
  input: StageInput,
  name: string,
  resampleEveryUpdate: boolean,
): StageResult {
  const { game, delta } = input;
  checkOrder(game, input.order);
  const start = analyzeTeam(game, input.team);
  let reference = start;
  let current = input.team;
  let currentReturn = start.expectedReturn;
  let earlierShifts: PositionShift[] = [];
  let earlierBounds: PositionAdvantageBound[] = [];
  let nextAnalysis: ExactAnalysis | null = null;
  const updates: UpdateRecord[] = [];
  for (const agent of input.order) {
    if (nextAnalysis) {
      reference = nextAnalysis;
      earlierShifts = [];
      earlierBounds = [];
    }
    const positions = positionsOf(game, agent);
    const { occupancy, advantages } = reference;
    const step = trustRegionStep({ game, team: current, positions, occupancy, advantages, delta });
    const next = withTables(current, step.tables);
    const change = measureChange(game, reference, current, step.tables, positions);
    const certificate = computeCertificate({
      surrogate: change.surrogate,
      advantageBound: change.advantageBound,
      positions,
      ownShifts: change.shifts,
      earlierShifts,
      earlierAdvantageBounds: earlierBounds,
    });
    const referenceIsCurrent = resampleEveryUpdate || updates.length === 0;
    // Fresh occupancy needs the next team's analysis anyway; its J is the update's "after".
    nextAnalysis = resampleEveryUpdate ? analyzeTeam(game, next) : null;
    const nextReturn = nextAnalysis ? nextAnalysis.expectedReturn : expectedReturnOf(game, next);
    const appliedOccupancy = referenceIsCurrent ? occupancy : computeOccupancy(game, current);
    const tighterCertificates = computeTighterCertificates({
      game,
      reference,
      referenceTeam: referenceIsCurrent ? current : input.team,
      current,
      next,
      currentOccupancy: appliedOccupancy,
      nextOccupancy: nextAnalysis ? nextAnalysis.occupancy : computeOccupancy(game, next),
      positions,
      earlierPositions: earlierShifts.map((shift) => shift.position),
      surrogate: change.surrogate,
      certificate,
    });
    updates.push(
      recordUpdate({
        game,
        agent,
        positions,
        step,
        current,
        next,
        referenceOccupancy: occupancy,
        appliedOccupancy,
        returnBefore: currentReturn,
        returnAfter: nextReturn,
        surrogate: change.surrogate,
        certificate,
        tighterCertificates,
      }),
    );
    earlierShifts = [...earlierShifts, ...change.shifts];
    earlierBounds = [...earlierBounds, ...change.policyAdvantageBounds];
    current = next;
    currentReturn = nextReturn;
  }
  return {
    schedule: name,
    updates,
    returnBefore: start.expectedReturn,
    returnAfter: currentReturn,
    team: current,
  };
}

/** TeamTR: every agent's step and certificate from the current intermediate team. */
export const freshSchedule: StageSchedule = {
  name: 'teamtr',
  description: 'sequential, occupancy and advantages of the current intermediate team',
  runStage: (input) => runSequentialStage(input, 'teamtr', true),
};

/** Sequential updates that all reuse the start-of-stage team's occupancy and advantages. */
export const staleSchedule: StageSchedule = {
  name: 'sequential-stale',
  description: 'sequential, occupancy and advantages of the start-of-stage team',
  runStage: (input) => runSequentialStage(input, 'sequential-stale', false),
};

/** Every agent steps at once from the start-of-stage team; one update, one certificate. */
export const jointSchedule: StageSchedule = {
  name: 'joint',
  description: 'every agent updated at once from the start-of-stage team',
  runStage(input) {
    const { game, delta } = input;
    checkOrder(game, input.order);
    const start = analyzeTeam(game, input.team);
    const tables = new Map<number, PositionTable>();
    const stepDrafts: Omit<AgentStepRecord, 'tokenKlOnAppliedTeam'>[] = [];
    const agents = [...input.order];
    for (const agent of agents) {
      const positions = positionsOf(game, agent);
      const { occupancy, advantages } = start;
      const step = trustRegionStep({
        game,
        team: input.team,
        positions,
        occupancy,
        advantages,
        delta,
      });
      for (const [position, table] of step.tables) tables.set(position, table);
      stepDrafts.push({
        agent,
        stepSize: step.stepSize,
        tokenKl: step.tokenKl,
        reachedDelta: step.reachedDelta,
      });
    }
    const next = withTables(input.team, tables);
    const positions = [...tables.keys()].sort((first, second) => first - second);
    const change = measureChange(game, start, input.team, tables, positions);
    const certificate = computeCertificate({
      surrogate: change.surrogate,
      advantageBound: change.advantageBound,
      positions,
      ownShifts: change.shifts,
      earlierShifts: [],
      earlierAdvantageBounds: [],
    });
    const returnAfter = expectedReturnOf(game, next);
    const trueImprovement = returnAfter - start.expectedReturn;
    const tighterCertificates = computeTighterCertificates({
      game,
      reference: start,
      referenceTeam: input.team,
      current: input.team,
      next,
      currentOccupancy: start.occupancy,
      nextOccupancy: computeOccupancy(game, next),
      positions,
      earlierPositions: [],
      surrogate: change.surrogate,
      certificate,
    });
    const update: UpdateRecord = {
      agents,
      steps: stepDrafts.map((draft) => ({ ...draft, tokenKlOnAppliedTeam: draft.tokenKl })),
      returnBefore: start.expectedReturn,
      returnAfter,
      trueImprovement,
      surrogateError: Math.abs(trueImprovement - change.surrogate),
      occupancyGap: 0,
      certificate,
      tighterCertificates,
    };
    return {
      schedule: 'joint',
      updates: [update],
      returnBefore: start.expectedReturn,
      returnAfter,
      team: next,
    };
  },
};

export const stageSchedules: readonly StageSchedule[] = [
  freshSchedule,
  staleSchedule,
  jointSchedule,
];

/** Agents in turn order 0 … N−1. */
export function turnOrder(game: TabularGame): number[] {
  return Array.from({ length: game.agentCount }, (_, agent) => agent);
}
