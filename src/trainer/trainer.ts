import { clearPool } from '../tensor/index.js';
import { getTask, type Problem, type Task } from '../tasks/index.js';
import { ConfigError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { parseWithSchema } from '../util/schema.js';
import { trainConfigSchema, type TrainConfig, type TrainConfigInput } from './config.js';
import { buildTeam, type BuiltTeam } from './build-team.js';
import { evaluateTeam } from './evaluate.js';
import { resolveObjective } from './objectives.js';
import type { EvaluationRecord, MetricsRecord, StageRecord, SwapRecord } from './records.js';
import { RunDirectory, type RunState } from './run-directory.js';
import { moveRemoteEndpoints } from './move-endpoints.js';
import { schedules } from './schedules.js';
import { pairedImprovement, StageRunner } from './stage.js';
import {
  certificateStatistics,
  stageImprovementStatistics,
  lastEvaluation,
  type EvaluationSummary,
  type TrainSummary,
} from './summary.js';
import { applyDueSwaps, recoveryRecords } from './swap.js';
import { configAtStage, swapProgress, validateSwaps } from './swap-plan.js';

/** What the trainer reports while it runs (the CLI draws progress bars from it). */
export type TrainProgress =
  | { kind: 'start'; budget: number; stage: number; generatedTokens: number }
  | {
      kind: 'stage';
      stage: number;
      generatedTokens: number;
      budget: number;
      reward: number;
      meanKl: number;
      agent: string;
    }
  | { kind: 'eval'; stage: number; accuracy: number }
  | { kind: 'checkpoint'; stage: number }
  | { kind: 'swap'; record: SwapRecord };

export interface TrainOptions {
  config: TrainConfigInput | TrainConfig;
  runDirectory: string;
  /** Continue the run in runDirectory from its last checkpoint. */
  resume?: boolean;
  onProgress?: (event: TrainProgress) => void;
  /** When aborted, the trainer finishes the current stage, saves and returns. */
  signal?: AbortSignal;
  /**
   * With `resume`: new addresses (agent name → baseURL) for remote agents whose server moved;
   * the run's config.json is updated (move-endpoints.ts).
   */
  endpoints?: Readonly<Record<string, string>>;
}

interface RunContext {
  config: TrainConfig;
  task: Task;
  built: BuiltTeam;
  run: RunDirectory;
  evalProblems: Problem[];
  tokenizers: Map<string, unknown>;
}

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
  const context = await prepare(options);
  const { config, run } = context;
  // A run that stopped before its first checkpoint (e.g. a remote agent's server failed)
  // resumes from the beginning: same seed and config, so it ends as an uninterrupted run would.
  const fromCheckpoint = options.resume === true && run.hasCheckpoint();
  if (options.resume && !fromCheckpoint) run.truncateMetrics(0);
  const state: RunState = fromCheckpoint
    ? await run.restoreCheckpoint(context.built.units)
    : {
        stage: 0,
        generatedTokens: 0,
        updates: 0,
        metricsBytes: 0,
        elapsedSeconds: 0,
        evaluationBefore: null,
        extra: {},
      };
  const emit = options.onProgress ?? (() => undefined);
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
  const elapsedBefore = state.elapsedSeconds;
  let interrupted = false;
  while (
    state.generatedTokens < config.budget.generatedTokens &&
    (config.budget.maxStages === undefined || state.stage < config.budget.maxStages)
  ) {
    if (options.signal?.aborted) {
      interrupted = true;
      break;
    }
    // Swaps due before this stage (issue #7, swap.ts).
    const swaps = await applyDueSwaps(context, state);
    run.appendMetrics(swaps.map((swap) => swap.record));
    swaps.forEach((swap) => emit({ kind: 'swap', record: swap.record }));
    state.stage++;
    const records = await runStage(context, state);
    const stageRecord = records[records.length - 1] as StageRecord;
    records.push(...recoveryRecords(state, stageRecord));
    emit({
      kind: 'stage',
      stage: state.stage,
      generatedTokens: state.generatedTokens,
      budget: config.budget.generatedTokens,
      reward: stageRecord.rewardAfter,
      meanKl: meanKl(records),
      agent: '',
    });
    if (state.stage % config.evaluation.every === 0) {
      const evaluation = await evaluationRecord(context, state);
      records.push(evaluation);
      emit({ kind: 'eval', stage: state.stage, accuracy: evaluation.accuracy });
    }
    run.appendMetrics(records);
    state.elapsedSeconds = elapsedBefore + (Date.now() - started) / 1000;
    if (state.stage % config.checkpointEvery === 0) {
      await saveState(context, state);
      emit({ kind: 'checkpoint', stage: state.stage });
    }
  }
  const finished = !interrupted;
  if (finished && lastEvaluation(run.readMetrics())?.stage !== state.stage) {
    run.appendMetrics([await evaluationRecord(context, state)]);
  }
  state.elapsedSeconds = elapsedBefore + (Date.now() - started) / 1000;
  await saveState(context, state);
  const summary = buildSummary(context, state, interrupted);
  await run.writeSummary(summary);
  return summary;
}

async function prepare(options: TrainOptions): Promise<RunContext> {
  let config: TrainConfig;
  let run: RunDirectory;
  if (options.resume) {
    run = await RunDirectory.open(options.runDirectory);
    if (options.endpoints) await moveRemoteEndpoints(run, options.endpoints);
    config = parseWithSchema(
      trainConfigSchema,
      await run.readConfig(),
      `${options.runDirectory}/config.json`,
    );
  } else {
    if (options.endpoints)
      throw new ConfigError(
        'endpoint',
        "moving endpoints goes with resume; a new run gives each remote agent's address in its config (agents[i].endpoint.baseURL)",
      );
    config = parseWithSchema(trainConfigSchema, options.config, 'config');
  }
  const task = await getTask(config.task, 'task');
  // Swaps (issue #7): refuse bad ones before anything is written; on resume, build the team with
  // the models of swaps applied up to the checkpoint, so its weights fit.
  const saved = options.resume ? await run!.readCheckpointState() : null;
  await validateSwaps(config, task, {
    completedStage: saved?.stage ?? 0,
    applied: saved ? swapProgress(saved).applied : [],
  });
  const built = await buildTeam(
    configAtStage(config, task, saved?.stage ?? 0),
    task,
    schedules[config.schedule],
  );
  if (!options.resume)
    run = await RunDirectory.create(options.runDirectory, {
      ...config,
      agents: built.agentConfigs,
    });
  const evalProblems = task.split('eval', { seed: config.seed, count: config.evaluation.problems });
  const tokenizers = new Map(
    built.units.map((unit) => {
      const agent = built.team.agents[unit.agentIndices[0]!]!;
      return [unit.name, agent.policy.tokenizer.toJSON()] as const;
    }),
  );
  return { config, task, built, run: run!, evalProblems, tokenizers };
}

async function runStage(context: RunContext, state: RunState): Promise<MetricsRecord[]> {
  const { config, task, built } = context;
  const stageStarted = Date.now();
  const seed = `${config.seed}/stage/${state.stage}`;
  const schedule = schedules[config.schedule];
  const runner = new StageRunner({
    stage: state.stage,
    schedule: schedule.name,
    team: built.team,
    task,
    units: built.units,
    problems: task.split('train', {
      seed: new RandomGenerator(seed).nextUint32(),
      count: config.rollout.problemsPerBatch,
    }),
    groupSize: config.rollout.groupSize,
    temperature: config.rollout.temperature,
    suffixResampling: config.rollout.suffixResampling,
    updateOrder: config.updateOrder,
    objective: resolveObjective(config.objective),
    trustRegion: { ...config.trustRegion, ...resolveObjective(config.objective) },
    epsilon: config.certificate.epsilon,
    confidence: config.certificate.confidence,
    seed,
    random: new RandomGenerator(`${seed}/updates`),
    tokensBefore: state.generatedTokens,
    updatesBefore: state.updates,
  });
  const outcome = await schedule.runStage(runner);
  state.generatedTokens += runner.generatedTokens;
  state.updates += runner.records.length;
  const change = pairedImprovement(outcome.first, outcome.last);
  const mean = (batch: typeof outcome.first) =>
    batch.trajectories.reduce((total, trajectory) => total + trajectory.reward, 0) /
    Math.max(1, batch.trajectories.length);
  const stageRecord: StageRecord = {
    type: 'stage',
    stage: state.stage,
    schedule: schedule.name,
    generatedTokens: state.generatedTokens,
    elapsedSeconds: (Date.now() - stageStarted) / 1000,
    rewardBefore: mean(outcome.first),
    rewardAfter: mean(outcome.last),
    improvement: change.improvement,
    improvementStandardError: change.standardError,
    regression: change.standardError > 0 && change.improvement < -2 * change.standardError,
    certificateSum: runner.records.reduce((total, record) => total + record.certificate, 0),
    updates: runner.records.length,
    outOfRegion: runner.records.filter((record) => !record.inRegion).length,
  };
  return [...runner.records, stageRecord];
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

function meanKl(records: readonly MetricsRecord[]): number {
  const kls = records.flatMap((record) => (record.type === 'update' ? [record.kl] : []));
  return kls.length ? kls.reduce((a, b) => a + b, 0) / kls.length : 0;
}

function buildSummary(context: RunContext, state: RunState, interrupted: boolean): TrainSummary {
  const records = context.run.readMetrics();
  const after = lastEvaluation(records);
  return {
    runDirectory: context.run.directory,
    schedule: context.config.schedule,
    seed: context.config.seed,
    stages: state.stage,
    updates: state.updates,
    generatedTokens: state.generatedTokens,
    wallSeconds: state.elapsedSeconds,
    interrupted,
    evalBefore: (state.evaluationBefore as EvaluationSummary | null) ?? null,
    evalAfter: after ? summarizeEvaluation(after) : null,
    certificates: certificateStatistics(records),
    stageImprovement: stageImprovementStatistics(records),
    regressions: records.filter((record) => record.type === 'stage' && record.regression).length,
  };
}
