import { clearPool } from '../tensor/index.js';
import type { TrainConfig } from './config/train-config.js';
import { prepareRun, type RunContext } from './run-context.js';
import type { MetricsRecord } from './records.js';
import { evaluationRecord, type EvaluationRecord } from './evaluations.js';
import { evaluationContext, runPosition, runStage } from './run-stage.js';
import { RunOutputs } from './outputs/run-outputs.js';
import { noEffectCause, stageHadNoEffect } from './warnings.js';
import { initialRunState, type EvaluationSummary, type RunState } from './run/run-state.js';
import { buildSummary, lastEvaluation, type TrainSummary } from './summary.js';
import type { TrainOptions } from './train-options.js';
export type { StageProgress, TrainOptions, TrainProgress } from './train-options.js';

/**
 * Trains a team under its config's schedule until the generated-token budget is spent (or
 * maxStages), evaluating, checkpointing and recording every update. A resumed run replays
 * nothing: every stage's randomness derives from (seed, stage), so it ends bit-identical to an
 * uninterrupted one.
 */
export async function train(options: TrainOptions): Promise<TrainSummary> {
  try {
    return await trainToEnd(options);
  } finally {
    // The buffer pool is the training loop's working set (up to 1 GiB); a library process that
    // goes on after training gets that memory back. Models are plain garbage once we return.
    clearPool();
  }
}

async function trainToEnd(options: TrainOptions): Promise<TrainSummary> {
  const started = Date.now();
  const context = await prepareRun(options);
  try {
    return await trainHeld(context, options, started);
  } finally {
    context.run.release();
  }
}

async function trainHeld(
  context: RunContext,
  options: TrainOptions,
  started: number,
): Promise<TrainSummary> {
  const outputs = await RunOutputs.open(context.config, context.run.directory);
  try {
    return await trainTracked(context, options, started, outputs);
  } finally {
    await outputs.close();
  }
}

async function trainTracked(
  context: RunContext,
  options: TrainOptions,
  started: number,
  outputs: RunOutputs,
): Promise<TrainSummary> {
  const { config, run, emit } = context;
  const state = await startingState(context, options.resume === true);
  await outputs.start(state);
  const elapsedBefore = state.elapsedSeconds;
  const elapsed = () => elapsedBefore + (Date.now() - started) / 1000;
  let interrupted = false;
  while (withinBudget(config, state)) {
    if (options.signal?.aborted) {
      interrupted = true;
      break;
    }
    run.appendMetrics(await stageWithHooks(context, state, outputs));
    outputs.sync();
    state.elapsedSeconds = elapsed();
    await run.beat();
    if (state.stage % config.checkpointEvery === 0) {
      await saveState(context, state);
      emit({ kind: 'checkpoint', stage: state.stage });
    }
  }
  if (!interrupted && !evaluatedAfter(lastEvaluation(run.readMetrics<MetricsRecord>()), state))
    run.appendMetrics([
      await evaluationRecord(evaluationContext(context), runPosition(state), 'end'),
    ]);
  outputs.sync();
  state.elapsedSeconds = elapsed();
  await saveState(context, state);
  const summary = buildSummary({
    records: run.readMetrics<MetricsRecord>(),
    runDirectory: run.directory,
    config,
    state,
    interrupted,
  });
  await run.writeSummary(summary);
  return summary;
}

function withinBudget(config: TrainConfig, state: RunState): boolean {
  const { generatedTokens, maxStages } = config.budget;
  return (
    state.generatedTokens < generatedTokens && (maxStages === undefined || state.stage < maxStages)
  );
}

/**
 * The state to start from: the last checkpoint's, or a new run's after its first evaluation.
 * A run that stopped before its first checkpoint (e.g. a remote agent's server failed)
 * resumes from the beginning: same seed and config, so it ends as an uninterrupted run would.
 */
async function startingState(context: RunContext, resume: boolean): Promise<RunState> {
  const { run, config, emit } = context;
  const fromCheckpoint = resume && run.hasCheckpoint();
  if (resume && !fromCheckpoint) run.truncateMetrics(0);
  const state = fromCheckpoint
    ? await run.restoreCheckpoint(context.built.units)
    : initialRunState();
  emit({
    kind: 'start',
    budget: config.budget.generatedTokens,
    stage: state.stage,
    generatedTokens: state.generatedTokens,
  });
  if (!fromCheckpoint) {
    const before = await evaluationRecord(evaluationContext(context), runPosition(state), 'start');
    run.appendMetrics([before]);
    state.evaluationBefore = summarizeEvaluation(before);
    emit({ kind: 'eval', stage: 0, accuracy: before.accuracy });
  }
  return state;
}

/** The hooks before it, the next stage, its record, the hooks after it, and a due evaluation. */
async function stageWithHooks(
  context: RunContext,
  state: RunState,
  outputs: RunOutputs,
): Promise<MetricsRecord[]> {
  const records: MetricsRecord[] = [];
  for (const hook of context.hooks) records.push(...(await hook.beforeStage(state)));
  state.stage++;
  const { updates, evaluations, stageRecord, last } = await runStage(context, state);
  outputs.stage(state.stage, last, context.built.team);
  records.push(...inOrder(updates, evaluations), stageRecord);
  for (const hook of context.hooks)
    records.push(...(await hook.afterStage(state, stageRecord, updates)));
  context.emit({
    kind: 'stage',
    stage: state.stage,
    generatedTokens: state.generatedTokens,
    budget: context.config.budget.generatedTokens,
    reward: stageRecord.rewardAfter,
    meanKl: mean(updates.map((record) => record.kl)),
    updates: stageRecord.updates,
    outOfRegion: stageRecord.outOfRegion,
    regression: stageRecord.regression,
  });
  // Said once per spell of stages that change nothing (the summary counts them all).
  const idle = stageHadNoEffect(updates);
  if (idle && !context.idleReported)
    context.emit({
      kind: 'warning',
      stage: state.stage,
      message: `stage ${state.stage}: ${noEffectCause(context.config, updates, context.run.directory)} (said once until a stage changes weights again)`,
    });
  context.idleReported = idle;
  if (state.stage % context.config.evaluation.every === 0) {
    const evaluation = await evaluationRecord(
      evaluationContext(context),
      runPosition(state),
      'stage',
    );
    records.push(evaluation);
    context.emit({ kind: 'eval', stage: state.stage, accuracy: evaluation.accuracy });
  }
  return records;
}

async function saveState(context: RunContext, state: RunState): Promise<void> {
  state.metricsBytes = context.run.metricsBytes();
  await context.run.saveCheckpoint(state, context.built.units, context.tokenizers, {
    baseWeights: context.config.checkpointBaseWeights,
  });
}

/**
 * Whether `last` evaluated the team `state` ends with: taken after the stage's updates and
 * hooks (at the start, after a stage, or at the end), not at a mark inside the stage.
 */
function evaluatedAfter(last: EvaluationRecord | null, state: RunState): boolean {
  return (
    last !== null &&
    last.stage === state.stage &&
    (last.at === undefined || last.at === 'start' || last.at === 'stage' || last.at === 'end')
  );
}

/** A stage's update records with the evaluations taken between them, in the order they ran. */
function inOrder(
  updates: readonly MetricsRecord[] & readonly { globalUpdate: number }[],
  evaluations: readonly EvaluationRecord[],
): MetricsRecord[] {
  const merged: MetricsRecord[] = [];
  let next = 0;
  for (const update of updates) {
    while (next < evaluations.length && (evaluations[next]!.updates ?? 0) <= update.globalUpdate)
      merged.push(evaluations[next++]!);
    merged.push(update);
  }
  return [...merged, ...evaluations.slice(next)];
}

function summarizeEvaluation(record: EvaluationRecord): EvaluationSummary {
  return { accuracy: record.accuracy, interval: record.interval, count: record.count };
}

function mean(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
}
