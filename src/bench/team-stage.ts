import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Problem } from '../tasks/index.js';
import type { TaskDefinition } from '../tasks/index.js';
import type { TrainConfigInput } from '../trainer/config/train-config.js';
import { prepareRun, type RunContext } from '../trainer/run-context.js';
import { schedules } from '../trainer/schedules.js';
import { Stage, type CertifiedUpdate, type StageOutcome } from '../trainer/stage.js';
import type { TeamBatch } from '../team/types.js';
import type { TrainableUnit } from '../trainer/update/units.js';
import { smolLM2, type RealModelShape } from './real-model.js';
import { writeShapeCheckpointInChild } from './team-stage-fixture.js';
import { getBackend, setBackend } from '../backend/index.js';
import { recordTimeSplit, type WorkloadFigure } from './context.js';
import { measureTimeSplit, type TimeSplit } from './time-split.js';
import { layerMatrixWeights } from './flops.js';
import { LayerRows, stageHeadFlops, stageLayerFlops } from './layer-rows.js';

/**
 * One TeamTR stage of a three-agent team at a real model's shape (SmolLM2-135M's or
 * Qwen2.5-1.5B's: random weights, real vocabulary, rank-8 LoRA agents), run through the
 * trainer's own stage and schedule: what a stage of `teamtr train` on that model costs in time
 * and memory on this machine.
 */

export interface TeamStageOptions {
  /** The model's shape. @default smolLM2 */
  shape?: RealModelShape;
  /** Prompts in the stage's batches. @default 4 */
  problemsPerBatch?: number;
  /** Trajectories per prompt. @default 4 */
  groupSize?: number;
  /** Longest turn, in tokens (a random model rarely stops early, so turns take all of it). @default 64 */
  maxTurnTokens?: number;
  /** Passes over each update's batch. @default 2 (the trainer's default) */
  epochs?: number;
  /** Minibatches per pass. @default 2 (the trainer's default) */
  minibatches?: number;
  /**
   * A directory holding the random checkpoint of the shape from an earlier run (written there
   * when absent); without it one is written to a temporary directory and removed afterwards.
   */
  checkpointDirectory?: string;
  /**
   * The agents' frozen base weights: `bfloat16` halves their memory and the bytes read per
   * decoding step (agents[].weightsDtype). @default 'float32'
   */
  weightsDtype?: 'float32' | 'bfloat16';
}

/**
 * The team's task: the answer turn's share of ASCII letters. A random model's turns are mostly
 * two-byte merges of every kind, so this share differs from trajectory to trajectory and the
 * group advantages are not zero.
 */
export function letterShareTask(problemCount: number): TaskDefinition {
  const problems = (split: string, count: number) =>
    Array.from({ length: count }, (_unused, index) => ({
      id: `${split}-${index}`,
      prompt: `Write problem ${index} of the ${split} split in plain words.`,
      answer: '',
    }));
  return {
    name: 'letter-share',
    problems: { train: problems('train', problemCount), eval: problems('eval', 2) },
    reward: ({ answer }: { problem: Problem; answer: string }) =>
      answer.length === 0 ? 0 : (answer.match(/[A-Za-z]/g)?.length ?? 0) / answer.length,
    roles: ['planner', 'writer', 'checker'].map((name) => ({
      name,
      prompt: `You are the ${name}.`,
    })),
  };
}

/** The trainer config of the benchmark's team on the checkpoint in `modelDirectory`. */
export function teamStageConfig(
  modelDirectory: string,
  options: Required<Omit<TeamStageOptions, 'checkpointDirectory' | 'shape'>>,
): TrainConfigInput {
  return {
    seed: 0,
    agents: [0, 1, 2].map((index) => ({
      name: `agent${index}`,
      model: modelDirectory,
      lora: { rank: 8 },
      weightsDtype: options.weightsDtype,
    })),
    protocol: { maxTurnTokens: options.maxTurnTokens },
    rollout: { problemsPerBatch: options.problemsPerBatch, groupSize: options.groupSize },
    trustRegion: { epochs: options.epochs, minibatches: options.minibatches },
    budget: { maxStages: 1 },
    evaluation: { problems: 1 },
  };
}

/** The trainer's Stage, timing its two phases: sampling batches and updating agents. */
class TimedStage extends Stage {
  samplingSeconds = 0;
  updateSeconds = 0;

  override async sample(reuseAfter?: {
    previous: TeamBatch;
    changed: TrainableUnit;
  }): Promise<TeamBatch> {
    const started = process.hrtime.bigint();
    try {
      return await super.sample(reuseAfter);
    } finally {
      this.samplingSeconds += secondsSince(started);
    }
  }

  override async update(
    unit: TrainableUnit,
    batch: TeamBatch,
    options?: { unreflectedShifts?: readonly number[]; trajectoryWeights?: Float64Array },
  ): Promise<CertifiedUpdate> {
    const started = process.hrtime.bigint();
    try {
      return await super.update(unit, batch, options);
    } finally {
      this.updateSeconds += secondsSince(started);
    }
  }
}

function secondsSince(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/**
 * Builds the team (writing the checkpoint first unless `checkpointDirectory` has it), runs
 * exactly one TeamTR stage of it, and reports the stage's seconds, its sampling and update
 * seconds, and the process's peak resident memory (which includes loading the three models).
 */
export async function benchmarkTeamStage(
  options: TeamStageOptions = {},
): Promise<WorkloadFigure[]> {
  const settings = teamStageSettings(options);
  const shape = options.shape ?? smolLM2;
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'teamtr-team-stage-'));
  const modelDirectory = options.checkpointDirectory ?? path.join(scratch, shape.name);
  try {
    if (!existsSync(path.join(modelDirectory, 'config.json')))
      writeShapeCheckpointInChild(modelDirectory, shape.name, `team-stage/${shape.name}`);
    const loadStarted = process.hrtime.bigint();
    const context = await prepareRun({
      config: teamStageConfig(modelDirectory, settings),
      task: letterShareTask(4 * settings.problemsPerBatch),
      runDirectory: path.join(scratch, 'run'),
    });
    const loadSeconds = secondsSince(loadStarted);
    const stage = firstStage(context, settings.problemsPerBatch);
    const models = context.built.models.map((loaded) => loaded.model);
    const rows = new LayerRows(models);
    const run = await runTimedStage(stage);
    rows.detach();
    const { config } = models[0]!;
    const layerFlops = stageLayerFlops(rows, layerMatrixWeights(config));
    const headFlops = stageHeadFlops(rows, config.vocabSize * config.hiddenSize);
    const precision = settings.weightsDtype === 'bfloat16' ? '-bf16' : '';
    const name = `${shape.name}-team-stage-${settings.problemsPerBatch}x${settings.groupSize}${precision}`;
    recordTimeSplit(`${name}-seconds`, run.split);
    for (const loaded of context.built.models) loaded.model.destroy();
    return teamStageFigures(name, { stage, rows, run, loadSeconds, layerFlops, headFlops });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The options with their defaults filled in. */
function teamStageSettings(
  options: TeamStageOptions,
): Required<Omit<TeamStageOptions, 'checkpointDirectory' | 'shape'>> {
  return {
    problemsPerBatch: options.problemsPerBatch ?? 4,
    groupSize: options.groupSize ?? 4,
    maxTurnTokens: options.maxTurnTokens ?? 64,
    epochs: options.epochs ?? 2,
    minibatches: options.minibatches ?? 2,
    weightsDtype: options.weightsDtype ?? 'float32',
  };
}

/** The run's stage 1 on `problemsPerBatch` training prompts, timing its phases. */
function firstStage(context: RunContext, problemsPerBatch: number): TimedStage {
  const seed = `${context.config.seed}/stage/1`;
  const plan = {
    stage: 1,
    seed,
    problems: context.task.split('train', { seed: 1, count: problemsPerBatch }),
    heldOutProblems: [],
    tokensBefore: 0,
    updatesBefore: 0,
  };
  return new TimedStage(
    plan,
    context.built.team,
    context.task,
    context.built.units,
    context.settings,
  );
}

/** What one timed stage left: its outcome, time split, wall seconds and CPU usage. */
interface TimedStageRun {
  outcome: StageOutcome;
  split: TimeSplit;
  seconds: number;
  cpu: NodeJS.CpuUsage;
}

/** Runs the stage with the TeamTR schedule through the timing backend. */
async function runTimedStage(stage: TimedStage): Promise<TimedStageRun> {
  const started = process.hrtime.bigint();
  const cpuBefore = process.cpuUsage();
  const backend = getBackend();
  const { result: outcome, split } = await measureTimeSplit(backend, async (timed) => {
    setBackend(timed);
    try {
      return await schedules.teamtr.runStage(stage);
    } finally {
      setBackend(backend);
    }
  });
  const seconds = secondsSince(started);
  const cpu = process.cpuUsage(cpuBefore);
  return { outcome, split, seconds, cpu };
}

/** The benchmark's figures, named `${name}-…`; peak memory is read as they are made. */
function teamStageFigures(
  name: string,
  measured: {
    stage: TimedStage;
    rows: LayerRows;
    run: TimedStageRun;
    loadSeconds: number;
    layerFlops: number;
    headFlops: number;
  },
): WorkloadFigure[] {
  const { stage, rows, run, loadSeconds, layerFlops, headFlops } = measured;
  const { seconds, cpu, outcome } = run;
  const flops = layerFlops + headFlops;
  return [
    // As a rate: the weight products of the layers and the LM head over the stage's seconds
    // (a lower bound on the work done; layer-rows.ts), which run-workload states as a
    // fraction of the bound: the stage's seconds at the bound are seconds × that fraction.
    { name: `${name}-seconds`, value: seconds, unit: 's', achievedGflops: flops / seconds / 1e9 },
    // CPU time of every thread: on a shared machine it moves less than wall time.
    { name: `${name}-cpu-seconds`, value: (cpu.user + cpu.system) / 1e6, unit: 's' },
    { name: `${name}-sampling-seconds`, value: stage.samplingSeconds, unit: 's' },
    { name: `${name}-update-seconds`, value: stage.updateSeconds, unit: 's' },
    { name: `${name}-load-seconds`, value: loadSeconds, unit: 's' },
    { name: `${name}-generated-tokens`, value: stage.generatedTokens, unit: 'tokens' },
    { name: `${name}-layer-rows-with-gradients`, value: rows.withGradients, unit: 'rows' },
    { name: `${name}-layer-rows-without-gradients`, value: rows.withoutGradients, unit: 'rows' },
    { name: `${name}-layer-gflop`, value: layerFlops / 1e9, unit: 'GFLOP' },
    {
      name: `${name}-head-rows`,
      value: rows.headWithoutGradients + rows.headWithGradients,
      unit: 'rows',
    },
    { name: `${name}-head-gflop`, value: headFlops / 1e9, unit: 'GFLOP' },
    { name: `${name}-updates-in-region`, value: inRegion(outcome.records), unit: 'updates' },
    {
      name: `${name}-peak-rss`,
      value: process.resourceUsage().maxRSS / 1024 ** 2,
      unit: 'GiB',
    },
  ];
}

function inRegion(records: ReadonlyArray<{ inRegion: boolean }>): number {
  return records.filter((record) => record.inRegion).length;
}
