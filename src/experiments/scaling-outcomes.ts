import { bootstrap, bootstrapRatio, mean, type Estimate } from '../rl/index.js';
import type { EvaluationRecord, StageRecord } from '../trainer/records.js';
import { bootstrapStream, cellsOf, type ScalingCell, type ScalingRun } from './scaling-analysis.js';

/**
 * What each schedule reached, compared two ways. At matched generated tokens every run has the
 * same budget, and a `teamtr` stage pays for a fresh batch after every update (N + 1 batches
 * where a stale stage samples 2), so it makes fewer updates: the comparison a user with a
 * sampling budget cares about. At matched updates every run is read at the same stage (the
 * fewest stages any schedule of that N and seed reached), whatever it spent: the comparison of
 * what each update is worth.
 */

const evaluationsOf = (run: ScalingRun) =>
  run.records.filter((record): record is EvaluationRecord => record.type === 'eval');
const stagesOf = (run: ScalingRun) =>
  run.records.filter((record): record is StageRecord => record.type === 'stage');

export interface OutcomeRow extends ScalingCell {
  seeds: number;
  /** Eval accuracy at the end of the budget (mean over seeds). */
  accuracyAtMatchedTokens: Estimate;
  /** Stage regressions over the whole budget (mean over seeds). */
  regressionsAtMatchedTokens: Estimate;
  generatedTokens: number;
  /** Eval accuracy at the last eval at or before the matched stage (mean over seeds). */
  accuracyAtMatchedUpdates: Estimate;
  regressionsAtMatchedUpdates: Estimate;
  /** The matched stage, averaged over seeds (stages × N updates). */
  matchedStage: number;
}

/** The fewest stages any schedule reached for this N and seed. */
function matchedStage(runs: readonly ScalingRun[], agents: number, seed: number): number {
  const finals = runs
    .filter((run) => run.agents === agents && run.seed === seed)
    .map((run) => Math.max(0, ...stagesOf(run).map((stage) => stage.stage)));
  return Math.min(...finals);
}

function lastEvaluation(run: ScalingRun, atOrBefore = Infinity): EvaluationRecord | null {
  const evaluations = evaluationsOf(run).filter((record) => record.stage <= atOrBefore);
  return evaluations.at(-1) ?? null;
}

function regressions(run: ScalingRun, atOrBefore = Infinity): number {
  return stagesOf(run).filter((stage) => stage.stage <= atOrBefore && stage.regression).length;
}

export function outcomes(runs: readonly ScalingRun[]): OutcomeRow[] {
  return cellsOf(runs).map((cell) => {
    const cellRuns = runs.filter(
      (run) => run.agents === cell.agents && run.schedule === cell.schedule,
    );
    const seed = `outcome/${cell.agents}/${cell.schedule}`;
    const perRun = cellRuns.map((run) => {
      const stage = matchedStage(runs, cell.agents, run.seed);
      return {
        stage,
        accuracy: lastEvaluation(run)?.accuracy ?? Number.NaN,
        regressions: regressions(run),
        tokens: Math.max(0, ...stagesOf(run).map((record) => record.generatedTokens)),
        matchedAccuracy: lastEvaluation(run, stage)?.accuracy ?? Number.NaN,
        matchedRegressions: regressions(run, stage),
      };
    });
    type PerRun = (typeof perRun)[number];
    const over = (read: (entry: PerRun) => number) =>
      bootstrap(perRun, (sample) => mean(sample.map(read)), { random: bootstrapStream(seed) });
    return {
      ...cell,
      seeds: cellRuns.length,
      accuracyAtMatchedTokens: over((entry) => entry.accuracy),
      regressionsAtMatchedTokens: over((entry) => entry.regressions),
      generatedTokens: mean(perRun.map((entry) => entry.tokens)),
      accuracyAtMatchedUpdates: over((entry) => entry.matchedAccuracy),
      regressionsAtMatchedUpdates: over((entry) => entry.matchedRegressions),
      matchedStage: mean(perRun.map((entry) => entry.stage)),
    };
  });
}

export interface StaleFreshRatio {
  agents: number;
  stale: string;
  fresh: string;
  /** Mean |error| of the stale schedule's updates over the fresh one's. */
  ratio: Estimate;
}

/**
 * The stale/fresh ratio of mean absolute surrogate errors at each N, both schedules' stages
 * resampled independently.
 */
export function staleFreshRatios(
  rows: readonly { agents: number; schedule: string; stageErrors: readonly number[][] }[],
  fresh = 'teamtr',
): StaleFreshRatio[] {
  const meanAbsolute = (stages: readonly number[][]) => mean(stages.flat().map(Math.abs));
  return rows
    .filter((row) => row.schedule !== fresh)
    .flatMap((stale) => {
      const reference = rows.find((row) => row.agents === stale.agents && row.schedule === fresh);
      if (!reference) return [];
      const seed = `ratio/${stale.agents}/${stale.schedule}`;
      const ratio = bootstrapRatio(stale.stageErrors, reference.stageErrors, meanAbsolute, {
        numerator: bootstrapStream(`${seed}/stale`),
        denominator: bootstrapStream(`${seed}/fresh`),
      });
      return [{ agents: stale.agents, stale: stale.schedule, fresh, ratio }];
    });
}

export interface CurvePoint {
  /** Mean over seeds of the eval's generated tokens (x of the token curve). */
  generatedTokens: number;
  stage: number;
  accuracy: number;
  /** Lowest and highest accuracy over seeds at this eval: the seed band. */
  band: [number, number];
}

/** Eval accuracy over training for one cell, aligned on the eval index across seeds. */
export function trainingCurve(runs: readonly ScalingRun[], cell: ScalingCell): CurvePoint[] {
  const perSeed = runs
    .filter((run) => run.agents === cell.agents && run.schedule === cell.schedule)
    .map(evaluationsOf);
  const length = Math.min(...perSeed.map((evaluations) => evaluations.length));
  return Array.from({ length: Number.isFinite(length) ? length : 0 }, (_unused, index) => {
    const points = perSeed.map((evaluations) => evaluations[index]!);
    const accuracies = points.map((point) => point.accuracy);
    return {
      generatedTokens: mean(points.map((point) => point.generatedTokens)),
      stage: mean(points.map((point) => point.stage)),
      accuracy: mean(accuracies),
      band: [Math.min(...accuracies), Math.max(...accuracies)],
    };
  });
}
