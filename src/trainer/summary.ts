import { inRegionTolerance, outOfRegionRate, rankCorrelation } from '../rl/index.js';
import type { TrainConfig } from './config.js';
import type { EvaluationRecord, MetricsRecord, StageRecord, UpdateRecord } from './records.js';
import type { EvaluationSummary, RunState } from './run-state.js';
import { runWarnings } from './warnings.js';

export type { EvaluationSummary } from './run-state.js';

/** What a run reports at the end: in summary.json, on stdout with --json, and in the terminal. */
export interface TrainSummary {
  runDirectory: string;
  schedule: string;
  seed: number;
  stages: number;
  updates: number;
  generatedTokens: number;
  wallSeconds: number;
  interrupted: boolean;
  evalBefore: EvaluationSummary | null;
  evalAfter: EvaluationSummary | null;
  certificates: CertificateStatistics;
  stageImprovement: StageImprovementStatistics;
  regressions: number;
  /**
   * Things that went wrong without stopping the run (e.g. stages whose updates changed no
   * weights), each with the setting to change. Empty for a healthy run.
   */
  warnings: string[];
}

/**
 * Two readings of how much a stage improved the team reward. A stage's own rewardAfter −
 * rewardBefore is measured on the problems its updates were fitted to, so it reads high; the
 * next stage's rewardBefore is measured on new problems, so rewardBefore(s+1) − rewardBefore(s)
 * is the out-of-sample change (noisier: the problems differ too). Measured improvements of
 * updates (the certificates' yardstick) are in-sample like the first.
 */
export interface StageImprovementStatistics {
  /** Mean over stages of rewardAfter − rewardBefore (the stage's own problems). */
  inSamplePerStage: number | null;
  /** Mean over consecutive stages of rewardBefore(s+1) − rewardBefore(s) (new problems). */
  outOfSamplePerStage: number | null;
}

export function stageImprovementStatistics(
  records: readonly MetricsRecord[],
): StageImprovementStatistics {
  const stages = stageRecords(records);
  const mean = (values: number[]) =>
    values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
  return {
    inSamplePerStage: mean(stages.map((stage) => stage.rewardAfter - stage.rewardBefore)),
    outOfSamplePerStage: mean(
      stages.slice(1).map((stage, index) => stage.rewardBefore - stages[index]!.rewardBefore),
    ),
  };
}

export interface CertificateStatistics {
  updates: number;
  meanKl: number;
  outOfRegionRate: number;
  /** Spearman correlation of cumulative certificate and cumulative measured improvement. */
  cumulativeRankCorrelation: number | null;
  /** Spearman correlation of per-update certificate and measured improvement. */
  perUpdateRankCorrelation: number | null;
  /** Fraction of measured updates whose certificate exceeded the measured improvement. */
  certificateAboveMeasuredFraction: number | null;
  meanCertificate: number;
  meanMeasuredImprovement: number | null;
  /**
   * The same against the held-out (out-of-sample) improvement, when the run measured it
   * (certificate.heldOutProblems > 0); null otherwise.
   */
  heldOut: YardstickStatistics | null;
}

/** How the certificate compares with one measured improvement (the yardstick). */
export interface YardstickStatistics {
  updates: number;
  cumulativeRankCorrelation: number | null;
  perUpdateRankCorrelation: number | null;
  certificateAboveMeasuredFraction: number | null;
  meanMeasuredImprovement: number | null;
}

export function certificateStatistics(records: readonly MetricsRecord[]): CertificateStatistics {
  const updates = records.filter((record): record is UpdateRecord => record.type === 'update');
  const inSample = yardstick(updates, (record) => record.measuredImprovement);
  const heldOut = yardstick(updates, (record) => record.heldOutImprovement ?? null);
  return {
    updates: updates.length,
    meanKl: mean(updates.map((record) => record.kl)) ?? 0,
    outOfRegionRate: updates.length
      ? outOfRegionRate({
          updateKl: updates.map((record) => record.kl),
          delta: updates.map((record) => record.delta),
          tolerance: inRegionTolerance,
        }).rate
      : 0,
    cumulativeRankCorrelation: inSample.cumulativeRankCorrelation,
    perUpdateRankCorrelation: inSample.perUpdateRankCorrelation,
    certificateAboveMeasuredFraction: inSample.certificateAboveMeasuredFraction,
    meanCertificate: mean(updates.map((record) => record.certificate)) ?? 0,
    meanMeasuredImprovement: inSample.meanMeasuredImprovement,
    heldOut: heldOut.updates > 0 ? heldOut : null,
  };
}

function yardstick(
  updates: readonly UpdateRecord[],
  measure: (record: UpdateRecord) => number | null,
): YardstickStatistics {
  const measured = updates.filter((record) => {
    const value = measure(record);
    return value !== null && Number.isFinite(value);
  });
  const cumulative = (values: number[]) =>
    values.map((_value, index) => values.slice(0, index + 1).reduce((a, b) => a + b, 0));
  const certificates = measured.map((record) => record.certificate);
  const improvements = measured.map((record) => measure(record)!);
  const correlation = (x: number[], y: number[]) =>
    x.length >= 3 ? finiteOrNull(rankCorrelation({ x, y })) : null;
  return {
    updates: measured.length,
    cumulativeRankCorrelation: correlation(cumulative(certificates), cumulative(improvements)),
    perUpdateRankCorrelation: correlation(certificates, improvements),
    certificateAboveMeasuredFraction: measured.length
      ? measured.filter((record) => record.certificate > measure(record)!).length / measured.length
      : null,
    meanMeasuredImprovement: mean(improvements),
  };
}

function mean(values: readonly number[]): number | null {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}

export function lastEvaluation(records: readonly MetricsRecord[]): EvaluationRecord | null {
  const evaluations = records.filter(
    (record): record is EvaluationRecord => record.type === 'eval',
  );
  return evaluations[evaluations.length - 1] ?? null;
}

export function stageRecords(records: readonly MetricsRecord[]): StageRecord[] {
  return records.filter((record): record is StageRecord => record.type === 'stage');
}

/** The summary of a run from its metrics and final state. */
export function buildSummary(options: {
  records: readonly MetricsRecord[];
  runDirectory: string;
  config: TrainConfig;
  state: RunState;
  interrupted: boolean;
}): TrainSummary {
  const { records, state } = options;
  const after = lastEvaluation(records);
  return {
    runDirectory: options.runDirectory,
    schedule: options.config.schedule,
    seed: options.config.seed,
    stages: state.stage,
    updates: state.updates,
    generatedTokens: state.generatedTokens,
    wallSeconds: state.elapsedSeconds,
    interrupted: options.interrupted,
    evalBefore: state.evaluationBefore,
    evalAfter: after
      ? { accuracy: after.accuracy, interval: after.interval, count: after.count }
      : null,
    certificates: certificateStatistics(records),
    stageImprovement: stageImprovementStatistics(records),
    regressions: stageRecords(records).filter((record) => record.regression).length,
    warnings: [...runWarnings(options.config, records), ...coverageWarnings(records, state)],
  };
}

/** The metrics must hold a record of every update the run made; say so if they do not. */
function coverageWarnings(records: readonly MetricsRecord[], state: RunState): string[] {
  const recorded = records.filter((record) => record.type === 'update').length;
  return recorded === state.updates
    ? []
    : [
        `metrics.jsonl records ${recorded} of the ${state.updates} updates this run made, so the statistics above cover only those; the file was changed outside teamtr`,
      ];
}
