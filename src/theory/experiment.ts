import { mean } from '../rl/index.js';
import type { TheoryConfig } from './config.js';
import { createGame, gameFamilyByName } from './families.js';
import { fitPowerLaw, type PowerLawFit } from './fit.js';
import { randomTeamPolicy } from './policy.js';
import { createSeededRandom, deriveSeed, seedPartFromText } from './random.js';
import { stageSchedules, turnOrder, type StageResult } from './schedules.js';
import {
  certificateTolerance,
  mergeBySchedule,
  tallyBounds,
  type TalliesBySchedule,
} from './tightness.js';

export { certificateTolerance } from './tightness.js';

/**
 * The scaling experiment (docs/method.md §7): for every team size N, `games` random games, each with
 * a random initial team; one stage of every schedule from that same team; per game and schedule
 * the accumulated surrogate error Σ_updates |true improvement − surrogate| and the accumulated
 * certificate penalty; then power-law slopes against N with bootstrap intervals. Every update's
 * certificate is checked against its true improvement.
 */
export interface ScheduleTotals {
  readonly updates: number;
  /** Σ |true − L| over the stage's updates. */
  readonly surrogateError: number;
  /** Σ penalty (L − certificate) over the stage's updates. */
  readonly penalty: number;
  readonly surrogate: number;
  readonly trueImprovement: number;
  /** Updates whose certificate exceeds the true improvement beyond rounding. */
  readonly violations: number;
  /** max over updates of certificate − true (≤ 0 when the bound holds everywhere). */
  readonly maxExcess: number;
  /** The same two for the literal docs/method.md §5 form of the certificate. */
  readonly specFormViolations: number;
  readonly maxSpecFormExcess: number;
  /** Steps that could not reach KL δ (advantage constant in every row). */
  readonly stepsMissingDelta: number;
  /** Largest occupancy gap of the stage's updates (0 unless the occupancy is stale). */
  readonly maxOccupancyGap: number;
  /** max over updates with a positive penalty of |true − L| / penalty (≤ 1 when bounds hold). */
  readonly maxErrorShare: number;
}

export interface GameOutcome {
  readonly family: string;
  readonly agentCount: number;
  readonly gameIndex: number;
  readonly returnBefore: number;
  /** Keyed by schedule name (`teamtr`, `sequential-stale`, `joint`). */
  readonly schedules: Readonly<Record<string, ScheduleTotals>>;
}

export function summarizeStage(stage: StageResult): ScheduleTotals {
  let totals = {
    updates: 0,
    surrogateError: 0,
    penalty: 0,
    surrogate: 0,
    trueImprovement: 0,
    violations: 0,
    maxExcess: -Infinity,
    specFormViolations: 0,
    maxSpecFormExcess: -Infinity,
    stepsMissingDelta: 0,
    maxOccupancyGap: 0,
    maxErrorShare: 0,
  };
  for (const update of stage.updates) {
    const tolerance = certificateTolerance(update);
    const excess = update.certificate.certificate - update.trueImprovement;
    const specFormExcess = update.certificate.specFormCertificate - update.trueImprovement;
    totals = {
      updates: totals.updates + 1,
      surrogateError: totals.surrogateError + update.surrogateError,
      penalty: totals.penalty + update.certificate.penalty,
      surrogate: totals.surrogate + update.certificate.surrogate,
      trueImprovement: totals.trueImprovement + update.trueImprovement,
      violations: totals.violations + (excess > tolerance ? 1 : 0),
      maxExcess: Math.max(totals.maxExcess, excess),
      specFormViolations: totals.specFormViolations + (specFormExcess > tolerance ? 1 : 0),
      maxSpecFormExcess: Math.max(totals.maxSpecFormExcess, specFormExcess),
      stepsMissingDelta:
        totals.stepsMissingDelta + update.steps.filter((step) => !step.reachedDelta).length,
      maxOccupancyGap: Math.max(totals.maxOccupancyGap, update.occupancyGap),
      maxErrorShare:
        update.certificate.penalty > 0
          ? Math.max(totals.maxErrorShare, update.surrogateError / update.certificate.penalty)
          : totals.maxErrorShare,
    };
  }
  return totals;
}

/**
 * A game's outcome and its certificates' tallies, kept apart: the tallies hold a ratio per update,
 * which would triple the per-game records that results.json stores.
 */
function playGame(
  config: TheoryConfig,
  family: string,
  agentCount: number,
  gameIndex: number,
): { outcome: GameOutcome; bounds: TalliesBySchedule } {
  const random = createSeededRandom(
    deriveSeed(config.seed, seedPartFromText(family), agentCount, gameIndex),
  );
  const shape = {
    agentCount,
    tokensPerTurn: config.tokensPerTurn,
    vocabularySize: config.vocabularySize,
    rounds: config.rounds,
  };
  const game = createGame(shape, gameFamilyByName(family), random);
  const team = randomTeamPolicy(game, random, config.logitScale);
  const schedules: Record<string, ScheduleTotals> = {};
  const bounds: Record<string, ReturnType<typeof tallyBounds>> = {};
  let returnBefore = 0;
  for (const schedule of stageSchedules) {
    const stage = schedule.runStage({ game, team, delta: config.delta, order: turnOrder(game) });
    schedules[schedule.name] = summarizeStage(stage);
    bounds[schedule.name] = tallyBounds(stage.updates);
    returnBefore = stage.returnBefore;
  }
  return {
    outcome: { family, agentCount, gameIndex, returnBefore, schedules },
    bounds,
  };
}

/**
 * One game of the experiment: its own seeded game and initial team (a function of the seed,
 * family, N and game index only), one stage of every schedule from that same team.
 */
export function runGame(
  config: TheoryConfig,
  family: string,
  agentCount: number,
  gameIndex: number,
): GameOutcome {
  return playGame(config, family, agentCount, gameIndex).outcome;
}

/** A per-game quantity whose growth with N is fitted. */
export interface ScalingMetric {
  readonly key: string;
  /** Prefix of the metric's keys in the JSON summary (`<prefix>_slope`, `<prefix>_ci`). */
  readonly summaryKey: string;
  readonly label: string;
  /** A column header of at most ten characters for the terminal table. */
  readonly shortLabel: string;
  readonly schedule: string;
  read(totals: ScheduleTotals): number;
}

export const scalingMetrics: readonly ScalingMetric[] = [
  {
    key: 'staleError',
    shortLabel: 'stale err',
    summaryKey: 'stale',
    label: 'surrogate error, stale occupancy',
    schedule: 'sequential-stale',
    read: (totals) => totals.surrogateError,
  },
  {
    key: 'freshError',
    shortLabel: 'fresh err',
    summaryKey: 'fresh',
    label: 'surrogate error, fresh occupancy (TeamTR)',
    schedule: 'teamtr',
    read: (totals) => totals.surrogateError,
  },
  {
    key: 'jointError',
    shortLabel: 'joint err',
    summaryKey: 'joint',
    label: 'surrogate error, joint update',
    schedule: 'joint',
    read: (totals) => totals.surrogateError,
  },
  {
    key: 'stalePenalty',
    shortLabel: 'stale pen',
    summaryKey: 'stale_penalty',
    label: 'certificate penalty, stale occupancy',
    schedule: 'sequential-stale',
    read: (totals) => totals.penalty,
  },
  {
    key: 'freshPenalty',
    shortLabel: 'fresh pen',
    summaryKey: 'fresh_penalty',
    label: 'certificate penalty, fresh occupancy (TeamTR)',
    schedule: 'teamtr',
    read: (totals) => totals.penalty,
  },
  {
    key: 'jointPenalty',
    shortLabel: 'joint pen',
    summaryKey: 'joint_penalty',
    label: 'certificate penalty, joint update',
    schedule: 'joint',
    read: (totals) => totals.penalty,
  },
  {
    key: 'staleGap',
    shortLabel: 'stale gap',
    summaryKey: 'stale_gap',
    label: 'largest occupancy gap (TV), stale occupancy',
    schedule: 'sequential-stale',
    read: (totals) => totals.maxOccupancyGap,
  },
];

export interface CertificateCheck {
  readonly updates: number;
  readonly violations: number;
  /** max over updates of certificate − true improvement (negative when every bound holds). */
  readonly maxExcess: number;
  readonly specFormViolations: number;
  /** The same for the literal docs/method.md §5 form. */
  readonly maxSpecFormExcess: number;
  readonly stepsMissingDelta: number;
  /** How much of its penalty the worst update's surrogate error used up. */
  readonly maxErrorShare: number;
  /** Every certificate of certificate-bounds.ts over the same updates, per schedule. */
  readonly bounds: TalliesBySchedule;
}

export interface FamilyResult {
  readonly family: string;
  readonly outcomes: readonly GameOutcome[];
  /** Keyed by `ScalingMetric.key`. */
  readonly fits: Readonly<Record<string, PowerLawFit>>;
  readonly check: CertificateCheck;
}

export interface TheoryExperimentResult {
  readonly config: TheoryConfig;
  /** In `config.families` order; the first is the headline family. */
  readonly families: readonly FamilyResult[];
  /** Every update of every family and schedule. */
  readonly check: CertificateCheck;
}

export interface TheoryProgress {
  readonly family: string;
  readonly agentCount: number;
  readonly completedGames: number;
  readonly totalGames: number;
}

/**
 * Errors smaller than this fraction of the accumulated |true improvement| are float rounding:
 * with one token per agent per stage, fresh occupancy makes the surrogate exact.
 */
const roundingFraction = 1e-9;

function fitMetric(
  config: TheoryConfig,
  outcomes: readonly GameOutcome[],
  metric: ScalingMetric,
  metricIndex: number,
): PowerLawFit {
  const agentCounts = [...config.agentCounts].sort((first, second) => first - second);
  const groups = agentCounts.map((agentCount) => ({
    agentCount,
    values: outcomes
      .filter((outcome) => outcome.agentCount === agentCount)
      .map((outcome) => metric.read(outcome.schedules[metric.schedule]!)),
  }));
  const improvementScale = mean(
    outcomes.map((outcome) => Math.abs(outcome.schedules[metric.schedule]!.trueImprovement)),
  );
  return fitPowerLaw({
    groups,
    bootstrapSamples: config.bootstrapSamples,
    random: createSeededRandom(
      deriveSeed(config.seed, seedPartFromText(outcomes[0]?.family ?? ''), 0xb0075, metricIndex),
    ),
    negligibleBelow: roundingFraction * improvementScale,
  });
}

export function checkCertificates(
  outcomes: readonly GameOutcome[],
  bounds: TalliesBySchedule,
): CertificateCheck {
  let check = {
    updates: 0,
    violations: 0,
    maxExcess: -Infinity,
    specFormViolations: 0,
    maxSpecFormExcess: -Infinity,
    stepsMissingDelta: 0,
    maxErrorShare: 0,
  };
  for (const outcome of outcomes) {
    for (const totals of Object.values(outcome.schedules)) {
      check = {
        updates: check.updates + totals.updates,
        violations: check.violations + totals.violations,
        maxExcess: Math.max(check.maxExcess, totals.maxExcess),
        specFormViolations: check.specFormViolations + totals.specFormViolations,
        maxSpecFormExcess: Math.max(check.maxSpecFormExcess, totals.maxSpecFormExcess),
        stepsMissingDelta: check.stepsMissingDelta + totals.stepsMissingDelta,
        maxErrorShare: Math.max(check.maxErrorShare, totals.maxErrorShare),
      };
    }
  }
  return { ...check, bounds };
}

/** Runs every game of one family (N ascending) and fits the scaling metrics. */
export function runFamily(
  config: TheoryConfig,
  family: string,
  onProgress?: (progress: TheoryProgress) => void,
): FamilyResult {
  const outcomes: GameOutcome[] = [];
  const bounds: TalliesBySchedule[] = [];
  const agentCounts = [...config.agentCounts].sort((first, second) => first - second);
  for (const agentCount of agentCounts) {
    for (let gameIndex = 0; gameIndex < config.games; gameIndex++) {
      const game = playGame(config, family, agentCount, gameIndex);
      outcomes.push(game.outcome);
      bounds.push(game.bounds);
      onProgress?.({ family, agentCount, completedGames: gameIndex + 1, totalGames: config.games });
    }
  }
  const fits: Record<string, PowerLawFit> = {};
  scalingMetrics.forEach((metric, index) => {
    fits[metric.key] = fitMetric(config, outcomes, metric, index);
  });
  return { family, outcomes, fits, check: checkCertificates(outcomes, mergeBySchedule(bounds)) };
}

/** Runs every family of the config; the result is a function of the config alone. */
export function runTheoryExperiment(
  config: TheoryConfig,
  onProgress?: (progress: TheoryProgress) => void,
): TheoryExperimentResult {
  const families = config.families.map((family) => runFamily(config, family, onProgress));
  return {
    config,
    families,
    check: checkCertificates(
      families.flatMap((family) => family.outcomes),
      mergeBySchedule(families.map((family) => family.check.bounds)),
    ),
  };
}
