import type { TrainConfig } from './config/train-config.js';
import type { EvaluationRecord, MetricsRecord, StageRecord } from './records.js';
import type { EvaluationSummary, RunState } from './run/run-state.js';
import { runWarnings } from './warnings.js';
import { certificateStatistics, type CertificateStatistics } from './certificate-statistics.js';

export {
  certificateStatistics,
  type CertificateFormStatistics,
  type CertificateStatistics,
  type YardstickStatistics,
} from './certificate-statistics.js';

export type { EvaluationSummary } from './run/run-state.js';

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
    warnings: [
      ...runWarnings(options.config, records, options.runDirectory),
      ...coverageWarnings(records, state),
    ],
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
