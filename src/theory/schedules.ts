import {
  computeCertificate,
  type PositionAdvantageBound,
  type PositionShift,
} from './certificate.js';
import { computeTighterCertificates } from './certificate-bounds.js';
import { analyzeTeam, computeOccupancy, expectedReturnOf, type ExactAnalysis } from './exact.js';
import { positionsOf, type TabularGame } from './game.js';
import { withTables, type PositionTable, type TeamPolicy } from './policy.js';
import {
  checkOrder,
  measureChange,
  recordUpdate,
  type AgentStepRecord,
  type StageInput,
  type StageResult,
  type StageSchedule,
  type UpdateRecord,
} from './stage-records.js';
import { trustRegionStep } from './trust-region.js';

export type {
  AgentStepRecord,
  StageInput,
  StageResult,
  StageSchedule,
  UpdateRecord,
} from './stage-records.js';

/**
 * The schedules of docs/method.md §4 in the tabular lab (stage-records.ts has what each records):
 * TeamTR and sequential-stale run the agents one after another from the current or the
 * start-of-stage team; joint updates every agent at once.
 */

/** What a sequential stage carries from one agent's update to the next. */
interface SequentialState {
  /** The team whose occupancy and advantages the next step uses. */
  reference: ExactAnalysis;
  current: TeamPolicy;
  currentReturn: number;
  earlierShifts: PositionShift[];
  earlierBounds: PositionAdvantageBound[];
  /** The analysis of the team after the last update, when the next reference is it. */
  nextAnalysis: ExactAnalysis | null;
  updates: UpdateRecord[];
}

/** The tighter certificates of one sequential update (certificate-bounds.ts). */
function sequentialTighterCertificates(
  input: StageInput,
  state: SequentialState,
  update: {
    next: TeamPolicy;
    positions: readonly number[];
    referenceIsCurrent: boolean;
    appliedOccupancy: readonly Float64Array[];
    change: ReturnType<typeof measureChange>;
    certificate: ReturnType<typeof computeCertificate>;
  },
): ReturnType<typeof computeTighterCertificates> {
  const { game } = input;
  return computeTighterCertificates({
    game,
    reference: state.reference,
    referenceTeam: update.referenceIsCurrent ? state.current : input.team,
    current: state.current,
    next: update.next,
    currentOccupancy: update.appliedOccupancy,
    nextOccupancy: state.nextAnalysis
      ? state.nextAnalysis.occupancy
      : computeOccupancy(game, update.next),
    positions: update.positions,
    earlierPositions: state.earlierShifts.map((shift) => shift.position),
    certificate: update.certificate,
  });
}

/** One agent's step of a sequential stage: the update, its certificates and its record. */
function sequentialStep(
  input: StageInput,
  state: SequentialState,
  agent: number,
  resampleEveryUpdate: boolean,
): void {
  const { game, delta } = input;
  const { current } = state;
  const positions = positionsOf(game, agent);
  const { occupancy, advantages } = state.reference;
  const step = trustRegionStep({ game, team: current, positions, occupancy, advantages, delta });
  const next = withTables(current, step.tables);
  const change = measureChange(game, state.reference, current, step.tables, positions);
  const certificate = computeCertificate({
    surrogate: change.surrogate,
    advantageBound: change.advantageBound,
    positions,
    ownShifts: change.shifts,
    earlierShifts: state.earlierShifts,
    earlierAdvantageBounds: state.earlierBounds,
  });
  const referenceIsCurrent = resampleEveryUpdate || state.updates.length === 0;
  // Fresh occupancy needs the next team's analysis anyway; its J is the update's "after".
  state.nextAnalysis = resampleEveryUpdate ? analyzeTeam(game, next) : null;
  const nextReturn = state.nextAnalysis
    ? state.nextAnalysis.expectedReturn
    : expectedReturnOf(game, next);
  const appliedOccupancy = referenceIsCurrent ? occupancy : computeOccupancy(game, current);
  const tighterCertificates = sequentialTighterCertificates(input, state, {
    next,
    positions,
    referenceIsCurrent,
    appliedOccupancy,
    change,
    certificate,
  });
  state.updates.push(
    recordUpdate({
      game,
      agent,
      positions,
      step,
      current,
      next,
      referenceOccupancy: occupancy,
      appliedOccupancy,
      returnBefore: state.currentReturn,
      returnAfter: nextReturn,
      surrogate: change.surrogate,
      certificate,
      tighterCertificates,
    }),
  );
  state.earlierShifts = [...state.earlierShifts, ...change.shifts];
  state.earlierBounds = [...state.earlierBounds, ...change.policyAdvantageBounds];
  state.current = next;
  state.currentReturn = nextReturn;
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
  checkOrder(input.game, input.order);
  const start = analyzeTeam(input.game, input.team);
  const state: SequentialState = {
    reference: start,
    current: input.team,
    currentReturn: start.expectedReturn,
    earlierShifts: [],
    earlierBounds: [],
    nextAnalysis: null,
    updates: [],
  };
  for (const agent of input.order) {
    // With fresh occupancy the team after the last update is the new reference.
    if (state.nextAnalysis) {
      state.reference = state.nextAnalysis;
      state.earlierShifts = [];
      state.earlierBounds = [];
    }
    sequentialStep(input, state, agent, resampleEveryUpdate);
  }
  return {
    schedule: name,
    updates: state.updates,
    returnBefore: start.expectedReturn,
    returnAfter: state.currentReturn,
    team: state.current,
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

/** Every agent's step from the start-of-stage team, merged into one change of tables. */
function jointSteps(input: StageInput, start: ExactAnalysis, agents: readonly number[]) {
  const { game, delta } = input;
  const tables = new Map<number, PositionTable>();
  const stepDrafts: Omit<AgentStepRecord, 'tokenKlOnAppliedTeam'>[] = [];
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
  return { tables, stepDrafts };
}

/** Every agent steps at once from the start-of-stage team; one update, one certificate. */
export const jointSchedule: StageSchedule = {
  name: 'joint',
  description: 'every agent updated at once from the start-of-stage team',
  runStage(input) {
    const { game } = input;
    checkOrder(game, input.order);
    const start = analyzeTeam(game, input.team);
    const agents = [...input.order];
    const { tables, stepDrafts } = jointSteps(input, start, agents);
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
