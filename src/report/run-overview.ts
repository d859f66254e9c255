import { certificateStatistics } from '../trainer/summary.js';
import { evaluationsOf, maximum, stagesOf, updatesOf } from './figure-data.js';
import type { RunOverview } from './run-overview-type.js';
import { runSchedule, runSeed, type RunView } from './runs.js';

export type { RunOverview } from './run-overview-type.js';

function taskName(config: Record<string, unknown> | null): string {
  const task = config?.task as { name?: unknown; difficulty?: unknown } | undefined;
  if (!task || typeof task.name !== 'string') return 'unknown';
  return typeof task.difficulty === 'number'
    ? `${task.name} (difficulty ${task.difficulty})`
    : task.name;
}

export function describeRun(run: RunView): RunOverview {
  const updates = updatesOf(run);
  const stages = stagesOf(run);
  const evaluations = evaluationsOf(run);
  const statistics = certificateStatistics(run.records);
  const tokens = run.records
    .map((record) => record.generatedTokens)
    .filter((value) => Number.isFinite(value));
  const budget = (run.config?.budget as { generatedTokens?: unknown } | undefined)?.generatedTokens;
  return {
    id: run.id,
    label: run.label,
    directory: run.directory,
    schedule: runSchedule(run),
    seed: runSeed(run),
    task: taskName(run.config),
    status: run.damage
      ? 'damaged'
      : run.summary
        ? run.summary.interrupted
          ? 'interrupted'
          : 'finished'
        : run.trainerActive === false
          ? 'stopped'
          : 'running',
    damage: run.damage ?? null,
    stages: maximum(stages.map((record) => record.stage)) ?? 0,
    updates: updates.length,
    generatedTokens: maximum(tokens) ?? 0,
    budget: typeof budget === 'number' ? budget : null,
    accuracyBefore: evaluations[0]?.accuracy ?? null,
    accuracyLast: evaluations.at(-1)?.accuracy ?? null,
    rewardLast: stages.at(-1)?.rewardAfter ?? null,
    meanKl: updates.length ? statistics.meanKl : null,
    outOfRegionRate: updates.length ? statistics.outOfRegionRate : null,
    cumulativeRankCorrelation: statistics.cumulativeRankCorrelation,
    regressions: stages.filter((record) => record.regression === true).length,
    records: run.records.length,
  };
}
