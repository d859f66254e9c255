import { bootstrapRatio, mean, pairedBootstrap, type Estimate } from '../rl/index.js';
import type { EvaluationRecord, StageRecord, UpdateRecord } from '../trainer/records.js';
import { bootstrapStream, cellsOf, type ScalingCell, type ScalingRun } from './scaling-analysis.js';

/**
 * What each schedule reached, read two ways and always against a named baseline schedule of the
 * same team size and seed. Within a seed every schedule starts from the same untrained team and
 * is evaluated on the same problems with the same random streams, so the paired difference
 * (schedule − baseline, one per seed) is clean where the schedules' own accuracies carry the
 * seed's baseline (which varies by tens of points). At matched tokens every run spent its whole
 * budget (the trainer stops at the token: within one prompt group); at matched updates every
 * run is read at the same count of agent updates (evaluation.everyUpdates marks: the largest
 * mark every schedule of the seed reached).
 */

const evaluationsOf = (run: ScalingRun) =>
  run.records.filter((record): record is EvaluationRecord => record.type === 'eval');
const stagesOf = (run: ScalingRun) =>
  run.records.filter((record): record is StageRecord => record.type === 'stage');
const updateCount = (run: ScalingRun) =>
  run.records.filter((record): record is UpdateRecord => record.type === 'update').length;

/** One run's figures. */
export interface RunReading {
  agents: number;
  schedule: string;
  seed: number;
  /** Generated tokens the run spent (its last stage's count). */
  tokens: number;
  updates: number;
  /** Accuracy before training and at the end of the budget (the first and last evaluations). */
  startAccuracy: number;
  finalAccuracy: number;
  regressions: number;
  /** Accuracy at each update mark (evaluations at `updates`), by mark. */
  accuracyAtUpdates: Map<number, number>;
}

export function readRun(run: ScalingRun): RunReading {
  const evaluations = evaluationsOf(run);
  const stages = stagesOf(run);
  return {
    agents: run.agents,
    schedule: run.schedule,
    seed: run.seed,
    tokens: stages.at(-1)?.generatedTokens ?? 0,
    updates: updateCount(run),
    startAccuracy: evaluations[0]?.accuracy ?? Number.NaN,
    finalAccuracy: evaluations.at(-1)?.accuracy ?? Number.NaN,
    regressions: stages.filter((stage) => stage.regression).length,
    accuracyAtUpdates: new Map(
      evaluations
        .filter((record) => record.at === 'updates' && record.mark !== undefined)
        .map((record) => [record.mark!, record.accuracy]),
    ),
  };
}

/** The largest update mark every run of the list was evaluated at (NaN when there is none). */
export function matchedUpdateMark(readings: readonly RunReading[]): number {
  const common = [...(readings[0]?.accuracyAtUpdates.keys() ?? [])].filter((mark) =>
    readings.every((reading) => reading.accuracyAtUpdates.has(mark)),
  );
  return common.length ? Math.max(...common) : Number.NaN;
}

/** A schedule's cell at one team size: its own figures (mean over seeds, per run). */
export interface OutcomeRow extends ScalingCell {
  seeds: number;
  /** Mean over seeds of the run's generated tokens. */
  tokens: number;
  /** Largest |tokens − the seed's mean over schedules| / that mean, over seeds. */
  tokenSpread: number;
  updates: number;
  startAccuracy: number;
  accuracyAtMatchedTokens: number;
  /** The update mark the cell is read at (the same for every schedule of a seed; mean over seeds). */
  matchedUpdates: number;
  accuracyAtMatchedUpdates: number;
  regressions: number;
}

/** A schedule against the baseline at one team size: paired differences over seeds. */
export interface PairedRow extends ScalingCell {
  baseline: string;
  seeds: number;
  /** schedule − baseline at the end of the budget, mean over seeds with its paired interval. */
  atMatchedTokens: Estimate;
  /** Seeds where the schedule was ahead / behind at matched tokens. */
  ahead: number;
  behind: number;
  atMatchedUpdates: Estimate;
  regressions: Estimate;
}

function readingsOf(runs: readonly ScalingRun[]): RunReading[] {
  return runs.map(readRun);
}

const sameSeed = (readings: readonly RunReading[], of: RunReading) =>
  readings.filter((reading) => reading.agents === of.agents && reading.seed === of.seed);

export function outcomes(runs: readonly ScalingRun[]): OutcomeRow[] {
  const readings = readingsOf(runs);
  return cellsOf(runs).map((cell) => {
    const own = readings.filter(
      (reading) => reading.agents === cell.agents && reading.schedule === cell.schedule,
    );
    const matched = own.map((reading) => {
      const seedRuns = sameSeed(readings, reading);
      const mark = matchedUpdateMark(seedRuns);
      const seedTokens = mean(seedRuns.map((entry) => entry.tokens));
      return {
        mark,
        accuracy: reading.accuracyAtUpdates.get(mark) ?? Number.NaN,
        spread: Math.abs(reading.tokens - seedTokens) / seedTokens,
      };
    });
    return {
      ...cell,
      seeds: own.length,
      tokens: mean(own.map((reading) => reading.tokens)),
      tokenSpread: Math.max(0, ...matched.map((entry) => entry.spread)),
      updates: mean(own.map((reading) => reading.updates)),
      startAccuracy: mean(own.map((reading) => reading.startAccuracy)),
      accuracyAtMatchedTokens: mean(own.map((reading) => reading.finalAccuracy)),
      matchedUpdates: mean(matched.map((entry) => entry.mark)),
      accuracyAtMatchedUpdates: mean(matched.map((entry) => entry.accuracy)),
      regressions: mean(own.map((reading) => reading.regressions)),
    };
  });
}

/**
 * Every schedule but the baseline against it, per team size: the mean over seeds of the
 * within-seed difference, with a 95% percentile bootstrap over seeds (the pairs). With three
 * seeds that interval spans about the lowest to the highest difference, so it excludes 0 when
 * all three seeds agree in sign.
 */
export function pairedOutcomes(runs: readonly ScalingRun[], baseline: string): PairedRow[] {
  const readings = readingsOf(runs);
  return cellsOf(runs)
    .filter((cell) => cell.schedule !== baseline)
    .flatMap((cell) => {
      const pairs = readings
        .filter((reading) => reading.agents === cell.agents && reading.schedule === cell.schedule)
        .flatMap((reading) => {
          const seedRuns = sameSeed(readings, reading);
          const reference = seedRuns.find((entry) => entry.schedule === baseline);
          if (!reference) return [];
          const mark = matchedUpdateMark(seedRuns);
          return [{ reading, reference, mark }];
        });
      if (pairs.length === 0) return [];
      const paired = (read: (reading: RunReading, mark: number) => number, name: string) =>
        pairedBootstrap({
          first: pairs.map((pair) => read(pair.reference, pair.mark)),
          second: pairs.map((pair) => read(pair.reading, pair.mark)),
          random: bootstrapStream(`paired/${cell.agents}/${cell.schedule}/${baseline}/${name}`),
        });
      const differences = pairs.map(
        (pair) => pair.reading.finalAccuracy - pair.reference.finalAccuracy,
      );
      return [
        {
          ...cell,
          baseline,
          seeds: pairs.length,
          atMatchedTokens: paired((reading) => reading.finalAccuracy, 'tokens'),
          ahead: differences.filter((difference) => difference > 0).length,
          behind: differences.filter((difference) => difference < 0).length,
          atMatchedUpdates: paired(
            (reading, mark) => reading.accuracyAtUpdates.get(mark) ?? Number.NaN,
            'updates',
          ),
          regressions: paired((reading) => reading.regressions, 'regressions'),
        },
      ];
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
 * resampled independently (pooled over the cell's runs).
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

/**
 * Eval accuracy over training for one cell at the start, the token marks and the end, aligned
 * on their order across seeds (the same token counts in every run of the cell).
 */
export function trainingCurve(runs: readonly ScalingRun[], cell: ScalingCell): CurvePoint[] {
  const onTokenAxis = (record: EvaluationRecord) =>
    record.at === undefined ||
    record.at === 'start' ||
    record.at === 'tokens' ||
    record.at === 'end';
  const perSeed = runs
    .filter((run) => run.agents === cell.agents && run.schedule === cell.schedule)
    .map((run) => evaluationsOf(run).filter(onTokenAxis));
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
