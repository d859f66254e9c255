import {
  bootstrap,
  leastSquaresLine,
  mean,
  percentileInterval,
  stratifiedResamples,
  type Estimate,
} from '../rl/index.js';
import type { MetricsRecord, UpdateRecord } from '../trainer/records.js';
import { RandomGenerator } from '../util/random.js';

/**
 * The LM-level scaling experiment's figures (docs/method.md §9), as pure functions of the runs'
 * metrics: the occupancy gap by update index (the paper's Fig. 2), the surrogate error of fresh
 * and stale batches and its growth with the team size N, accuracy and regressions at matched
 * generated tokens and at matched updates, and training curves with their seed band (Fig. 3).
 * Intervals are 95% percentile bootstraps over stages (for per-update quantities: updates of
 * one stage share a batch, so the stage is the independent unit) or over seeds (for a run's
 * final accuracy).
 */

/** One finished run of the grid. */
export interface ScalingRun {
  agents: number;
  schedule: string;
  seed: number;
  records: readonly MetricsRecord[];
}

export interface ScalingCell {
  agents: number;
  schedule: string;
}

/** The resampling stream named `name`: the same name gives the same interval. */
export function bootstrapStream(name: string): RandomGenerator {
  return new RandomGenerator(`bootstrap/${name}`);
}

const updatesOf = (run: ScalingRun) =>
  run.records.filter((record): record is UpdateRecord => record.type === 'update');

/** The cells of the grid in a stable order (N, then schedule as first seen). */
export function cellsOf(runs: readonly ScalingRun[]): ScalingCell[] {
  const schedules = [...new Set(runs.map((run) => run.schedule))];
  const agents = [...new Set(runs.map((run) => run.agents))].sort((a, b) => a - b);
  return agents.flatMap((count) =>
    schedules
      .filter((schedule) => runs.some((run) => run.agents === count && run.schedule === schedule))
      .map((schedule) => ({ agents: count, schedule })),
  );
}

const runsOf = (runs: readonly ScalingRun[], cell: ScalingCell) =>
  runs.filter((run) => run.agents === cell.agents && run.schedule === cell.schedule);

/** The updates of every stage of the cell's runs, one entry per stage. */
function stageGroups(runs: readonly ScalingRun[], cell: ScalingCell): UpdateRecord[][] {
  return runsOf(runs, cell).flatMap((run) => {
    const byStage = new Map<number, UpdateRecord[]>();
    for (const update of updatesOf(run)) {
      const group = byStage.get(update.stage) ?? [];
      group.push(update);
      byStage.set(update.stage, group);
    }
    return [...byStage.values()];
  });
}

export interface OccupancyGapRow extends ScalingCell {
  updateIndex: number;
  stages: number;
  gap: Estimate;
}

/**
 * ½·E|W_{<i} − 1| of the i-th update of a stage against the stage's starting team: how far the
 * contexts the i-th agent is trained on have moved from those a stale batch shows (the first
 * update of a stage has none).
 */
export function occupancyGapByUpdateIndex(runs: readonly ScalingRun[]): OccupancyGapRow[] {
  return cellsOf(runs).flatMap((cell) => {
    const stages = stageGroups(runs, cell);
    const longest = Math.max(0, ...stages.map((stage) => stage.length));
    const rows: OccupancyGapRow[] = [];
    for (let updateIndex = 1; updateIndex < longest; updateIndex++) {
      const gaps = stages
        .map((stage) => stage.find((update) => update.updateIndex === updateIndex)?.occupancyGap)
        .filter((gap): gap is number => typeof gap === 'number');
      if (gaps.length === 0) continue;
      rows.push({
        ...cell,
        updateIndex,
        stages: gaps.length,
        gap: bootstrap(gaps, mean, {
          random: bootstrapStream(`gap/${cell.agents}/${cell.schedule}/${updateIndex}`),
        }),
      });
    }
    return rows;
  });
}

export interface SurrogateErrorRow extends ScalingCell {
  updates: number;
  /** Mean |held-out improvement − surrogate| over updates. */
  absoluteError: Estimate;
  /** Mean held-out improvement − surrogate (negative: the surrogate promised more). */
  signedError: Estimate;
  /**
   * E|noise| of the held-out measurement alone (√(2/π) × its mean standard error): the part of
   * the absolute error that would remain with an exact surrogate.
   */
  noiseFloor: number;
}

/** Per-update errors of the cell's updates measured out of sample, grouped by stage. */
function errorsByStage(runs: readonly ScalingRun[], cell: ScalingCell) {
  return stageGroups(runs, cell)
    .map((stage) =>
      stage
        .filter((update) => typeof update.heldOutImprovement === 'number')
        .map((update) => ({
          signed: update.heldOutImprovement! - update.surrogate,
          standardError: update.heldOutImprovementStandardError ?? Number.NaN,
        })),
    )
    .filter((stage) => stage.length > 0);
}

type StageErrors = ReturnType<typeof errorsByStage>[number];

/** held-out improvement − surrogate of the cell's updates, one list per stage. */
export function signedErrorsByStage(runs: readonly ScalingRun[], cell: ScalingCell): number[][] {
  return errorsByStage(runs, cell).map((stage) => stage.map((error) => error.signed));
}
const meanAbsolute = (stages: readonly StageErrors[]) =>
  mean(stages.flat().map((error) => Math.abs(error.signed)));
const meanSigned = (stages: readonly StageErrors[]) =>
  mean(stages.flat().map((error) => error.signed));

/**
 * The surrogate's error per update: how far the surrogate gain L, computed on the batch the
 * update was fitted to (fresh for `teamtr`, the stage's stale one for `sequential-stale` and
 * `joint`), is from the update's measured effect on held-out prompts. Needs runs with
 * `certificate.heldOutProblems > 0`.
 */
export function surrogateErrors(runs: readonly ScalingRun[]): SurrogateErrorRow[] {
  return cellsOf(runs).flatMap((cell) => {
    const stages = errorsByStage(runs, cell);
    if (stages.length === 0) return [];
    const seed = `error/${cell.agents}/${cell.schedule}`;
    const over = (statistic: (sample: readonly StageErrors[]) => number) =>
      bootstrap(stages, statistic, { random: bootstrapStream(seed) });
    const standardErrors = stages
      .flat()
      .map((error) => error.standardError)
      .filter(Number.isFinite);
    return [
      {
        ...cell,
        updates: stages.flat().length,
        absoluteError: over(meanAbsolute),
        signedError: over(meanSigned),
        noiseFloor: Math.sqrt(2 / Math.PI) * mean(standardErrors),
      },
    ];
  });
}

export interface ErrorSlope {
  schedule: string;
  /** Exponent of mean |error| ∝ N^slope (least squares on log-log), with its interval. */
  slope: Estimate;
}

/**
 * The log-log slope of the mean absolute surrogate error against N, per schedule, with a
 * bootstrap that resamples stages within each N and refits.
 */
export function surrogateErrorSlopes(runs: readonly ScalingRun[]): ErrorSlope[] {
  const schedules = [...new Set(runs.map((run) => run.schedule))];
  return schedules.flatMap((schedule) => {
    const groups = [...new Set(runs.map((run) => run.agents))]
      .sort((a, b) => a - b)
      .map((agents) => ({ agents, stages: errorsByStage(runs, { agents, schedule }) }))
      .filter((group) => group.stages.length > 0);
    if (groups.length < 2) return [];
    const slopeOf = (means: readonly number[]) =>
      means.every((value) => value > 0)
        ? leastSquaresLine(
            groups.map((group) => Math.log(group.agents)),
            means.map(Math.log),
          ).slope
        : Number.NaN;
    // Each N's stages are resampled on their own stream; draw k of every N makes slope k.
    const slopes = stratifiedResamples({
      strata: groups.map((group) => group.stages),
      statistic: (resampled) => slopeOf(resampled.map(meanAbsolute)),
      samples: 2000,
      random: groups.map((group) => bootstrapStream(`slope/${schedule}/${group.agents}`)),
    });
    const value = slopeOf(groups.map((group) => meanAbsolute(group.stages)));
    return [{ schedule, slope: { value, interval: percentileInterval(slopes) } }];
  });
}
