import { clearPool } from '../tensor/index.js';
import type { Problem } from '../tasks/index.js';
import type { TeamBatch } from '../team/types.js';
import { RandomGenerator } from '../util/random.js';
import type { TrainConfig } from './config/train-config.js';
import { prepareRun, type RunContext } from './run-context.js';
import { evaluateTeam } from './evaluate.js';
import type { EvaluationRecord, MetricsRecord, StageRecord, UpdateRecord } from './records.js';
import { holdRun } from './run/run-lock.js';
import { noEffectCause, stageHadNoEffect } from './warnings.js';
import { initialRunState, type EvaluationSummary, type RunState } from './run/run-state.js';
import { schedules } from './schedules.js';
import { pairedImprovement, Stage } from './stage.js';
import { buildSummary, lastEvaluation } from './summary.js';
import { stageRegressed } from '../rl/index.js';
import type { TrainSummary } from './summary.js';
import type { TrainOptions } from './train-options.js';
export type { TrainOptions, TrainProgress } from './train-options.js';

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
  const lock = await holdRun(context.run.directory);
  try {
    return await trainHeld(context, options, started, lock.beat);
  } finally {
    lock.release();
  }
}

async function trainHeld(
  context: RunContext,
  options: TrainOptions,
  started: number,
  heartbeat: () => Promise<void>,
): Promise<TrainSummary> {
  const { config, run, emit } = context;
  const state = await startingState(context, options.resume === true);
  const elapsedBefore = state.elapsedSeconds;
  const elapsed = () => elapsedBefore + (Date.now() - started) / 1000;
  let interrupted = false;
  while (withinBudget(config, state)) {
    if (options.signal?.aborted) {
      interrupted = true;
      break;
    }
    run.appendMetrics(await stageWithHooks(context, state));
    state.elapsedSeconds = elapsed();
    await heartbeat();
    if (state.stage % config.checkpointEvery === 0) {
      await saveState(context, state);
      emit({ kind: 'checkpoint', stage: state.stage });
    }
  }
  if (!interrupted && lastEvaluation(run.readMetrics())?.stage !== state.stage)
    run.appendMetrics([await evaluationRecord(context, state)]);
  state.elapsedSeconds = elapsed();
  await saveState(context, state);
  const summary = buildSummary({
    records: run.readMetrics(),
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
    const before = await evaluationRecord(context, state);
    run.appendMetrics([before]);
    state.evaluationBefore = summarizeEvaluation(before);
    emit({ kind: 'eval', stage: 0, accuracy: before.accuracy });
  }
  return state;
}

/** The hooks before it, the next stage, its record, the hooks after it, and a due evaluation. */
async function stageWithHooks(context: RunContext, state: RunState): Promise<MetricsRecord[]> {
  const records: MetricsRecord[] = [];
  for (const hook of context.hooks) records.push(...(await hook.beforeStage(state)));
  state.stage++;
  const { updates, stageRecord } = await runStage(context, state);
  records.push(...updates, stageRecord);
  for (const hook of context.hooks) records.push(...hook.afterStage(state, stageRecord, updates));
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
      message: `stage ${state.stage}: ${noEffectCause(context.config, updates)} (said once until a stage changes weights again)`,
    });
  context.idleReported = idle;
  if (state.stage % context.config.evaluation.every === 0) {
    const evaluation = await evaluationRecord(context, state);
    records.push(evaluation);
    context.emit({ kind: 'eval', stage: state.stage, accuracy: evaluation.accuracy });
  }
  return records;
}

/** Runs stage `state.stage` under the run's schedule; advances the token and update counts. */
async function runStage(
  context: RunContext,
  state: RunState,
): Promise<{ updates: UpdateRecord[]; stageRecord: StageRecord }> {
  const { config, task, built } = context;
  const started = Date.now();
  const seed = `${config.seed}/stage/${state.stage}`;
  const problems = task.split('train', {
    seed: new RandomGenerator(seed).nextUint32(),
    count: config.rollout.problemsPerBatch,
  });
  const plan = {
    stage: state.stage,
    seed,
    problems,
    heldOutProblems: heldOutProblems(context, seed, problems),
    tokensBefore: state.generatedTokens,
    updatesBefore: state.updates,
  };
  const stage = new Stage(plan, built.team, task, built.units, context.settings);
  const { first, last, records } = await schedules[config.schedule].runStage(stage);
  state.generatedTokens += stage.generatedTokens;
  state.updates += records.length;
  const change = pairedImprovement(first, last);
  const stageRecord: StageRecord = {
    type: 'stage',
    stage: state.stage,
    schedule: config.schedule,
    generatedTokens: state.generatedTokens,
    elapsedSeconds: (Date.now() - started) / 1000,
    rewardBefore: meanReward(first),
    rewardAfter: meanReward(last),
    improvement: change.improvement,
    improvementStandardError: change.standardError,
    regression: stageRegressed(change),
    certificateSum: records.reduce((total, record) => total + record.certificate, 0),
    updates: records.length,
    outOfRegion: records.filter((record) => !record.inRegion).length,
    measurementTokens: stage.measurementTokens,
  };
  return { updates: records, stageRecord };
}

/**
 * The stage's held-out prompts: training problems other than the stage's own (neither the same
 * problem nor the same prompt text; a task whose prompts repeat falls back to other problems).
 */
function heldOutProblems(context: RunContext, seed: string, stageProblems: Problem[]): Problem[] {
  const count = context.config.certificate.heldOutProblems;
  if (count === 0) return [];
  const ids = new Set(stageProblems.map((problem) => problem.id));
  const prompts = new Set(stageProblems.map((problem) => problem.prompt));
  const candidates = context.task
    .split('train', {
      seed: new RandomGenerator(`${seed}/held-out`).nextUint32(),
      count: count + stageProblems.length,
    })
    .filter((problem) => !ids.has(problem.id));
  const unseen = candidates.filter((problem) => !prompts.has(problem.prompt));
  const repeated = candidates.filter((problem) => prompts.has(problem.prompt));
  return [...unseen, ...repeated].slice(0, count);
}

async function evaluationRecord(context: RunContext, state: RunState): Promise<EvaluationRecord> {
  const evaluation = await evaluateTeam({
    team: context.built.team,
    task: context.task,
    problems: context.evalProblems,
    temperature: context.config.evaluation.temperature,
    seed: `${context.config.seed}/eval`,
  });
  return {
    type: 'eval',
    stage: state.stage,
    generatedTokens: state.generatedTokens,
    accuracy: evaluation.accuracy,
    interval: evaluation.interval,
    count: evaluation.count,
    meanReward: evaluation.meanReward,
    agents: evaluation.agents,
  };
}

async function saveState(context: RunContext, state: RunState): Promise<void> {
  state.metricsBytes = context.run.metricsBytes();
  await context.run.saveCheckpoint(state, context.built.units, context.tokenizers, {
    baseWeights: context.config.checkpointBaseWeights,
  });
}

function summarizeEvaluation(record: EvaluationRecord): EvaluationSummary {
  return { accuracy: record.accuracy, interval: record.interval, count: record.count };
}

function meanReward(batch: TeamBatch): number {
  return (
    batch.trajectories.reduce((total, trajectory) => total + trajectory.reward, 0) /
    Math.max(1, batch.trajectories.length)
  );
}

function mean(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
}
