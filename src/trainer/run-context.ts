import { taskFingerprint, type Problem, type Task } from '../tasks/index.js';
import { ConfigError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';
import { buildTeam, type BuiltTeam } from './setup/build-team.js';
import { trainConfigSchema, type TrainConfig } from './config/train-config.js';
import { divergenceHook } from './run/divergence.js';
import { moveRemoteEndpoints } from './run/move-endpoints.js';
import { HeldRun } from './run/run-directory.js';
import { runProvenance } from './outputs/provenance.js';
import type { StageHook } from './run/stage-hooks.js';
import type { MetricsRecord } from './records.js';
import { schedules } from './schedules.js';
import { adaptiveDeltaHook } from './step-control/adaptive-delta.js';
import { stageRollbackHook } from './step-control/stage-rollback.js';
import type { TrainableUnit } from './update/units.js';
import type { StageSettings } from './stage.js';
import { resolveStageSettings } from './stage-settings.js';
import { swapHook } from './swap/swap.js';
import { configAtStage, validateSwaps } from './swap/swap-plan.js';
import { asTask, resolveRunTask } from './setup/task-source.js';
import type { TrainOptions, TrainProgress } from './train-options.js';

/** What stays fixed while a run trains. */
export interface RunContext {
  config: TrainConfig;
  task: Task;
  built: BuiltTeam;
  /** The run directory, held by this trainer until `run.release()`. */
  run: HeldRun;
  settings: StageSettings;
  evalProblems: Problem[];
  /** Tokenizer JSON saved with each unit's checkpoint (a swap replaces its unit's). */
  tokenizers: Map<string, unknown>;
  hooks: StageHook<MetricsRecord>[];
  emit: (event: TrainProgress) => void;
  /** The last stage changed no weights and the user was told. */
  idleReported: boolean;
}

/**
 * Everything a run needs before its first stage: the resolved config and task, the team with
 * its units, the run directory (created, or opened to resume, and held) and the stage hooks.
 * Nothing is written to the run directory before it is held; if preparing fails, it is let go.
 */
export async function prepareRun(options: TrainOptions): Promise<RunContext> {
  const existing = options.resume ? await HeldRun.open(options.runDirectory) : null;
  let run = existing;
  try {
    const config = await resolvedConfig(options, existing);
    const task = await resolveRunTask(config, options.task);
    config.taskFingerprint ??= taskFingerprint(task);
    const built = await teamAtCheckpoint(config, task, existing);
    const tokenizers = new Map(
      built.units.map((unit) => {
        const agent = built.team.agents[unit.agentIndices[0]!]!;
        return [unit.name, agent.policy.tokenizer.toJSON()] as const;
      }),
    );
    const emit = options.onProgress ?? (() => undefined);
    const target = { config, task, built, tokenizers };
    const hooks = [
      swapHook(target, (record) => emit({ kind: 'swap', record })),
      divergenceHook(built, config),
      ...stepControlHooks(config, built.units),
    ];
    run ??= await HeldRun.create(options.runDirectory, {
      ...config,
      agents: built.agentConfigs,
      provenance: runProvenance(config, options.taskModule),
    });
    return {
      ...target,
      run,
      settings: resolveStageSettings(config),
      evalProblems: task.split('eval', { seed: config.seed, count: config.evaluation.problems }),
      hooks,
      emit,
      idleReported: false,
    };
  } catch (error) {
    run?.release();
    throw error;
  }
}

/**
 * The team as of the run's checkpoint. Swaps: refuse bad ones before anything is written; on
 * resume, build the team with the models of swaps applied up to the checkpoint, so its
 * weights fit.
 */
async function teamAtCheckpoint(
  config: TrainConfig,
  task: Task,
  existing: HeldRun | null,
): Promise<BuiltTeam> {
  const saved = existing ? await existing.readCheckpointState() : null;
  const schedule = schedules[config.schedule];
  await validateSwaps(config, task, {
    completedStage: saved?.stage ?? 0,
    applied: saved?.swaps.applied ?? [],
    sharedModel: schedule.sharedModel,
  });
  return buildTeam(configAtStage(config, task, saved?.stage ?? 0), task, schedule);
}

/**
 * The run's config: on resume the run directory's own (with moved endpoints), else the given
 * one (the run directory is created once the team has loaded).
 */
async function resolvedConfig(
  options: TrainOptions,
  existing: HeldRun | null,
): Promise<TrainConfig> {
  if (!existing) {
    if (options.endpoints)
      throw new ConfigError(
        'endpoint',
        "moving endpoints goes with resume; a new run gives each remote agent's address in its config (agents[i].endpoint.baseURL)",
      );
    return parseWithSchema(trainConfigSchema, withCodeTask(options), 'config');
  }
  if (options.endpoints) await moveRemoteEndpoints(existing, options.endpoints);
  return parseWithSchema(
    trainConfigSchema,
    await existing.readConfig(),
    `${options.runDirectory}/config.json`,
  );
}

/** The config with `task` naming the task given in code, if one is. */
function withCodeTask(options: TrainOptions): unknown {
  if (!options.task) return options.config;
  const config = options.config as { task?: unknown };
  if (config.task !== undefined)
    throw new ConfigError(
      'task',
      'a task is given both in the config and in code (train({ task })); give one of them',
    );
  return { ...config, task: { name: 'code', task: asTask(options.task).name } };
}

/**
 * The step-control hooks the config asks for (adaptive δ, stage rollback); both read the
 * held-out measurement of every update.
 */
function stepControlHooks(
  config: TrainConfig,
  units: readonly TrainableUnit[],
): StageHook<MetricsRecord>[] {
  const { adaptiveDelta, rollback } = config.trustRegion;
  for (const [setting, what] of [
    [adaptiveDelta && 'trustRegion.adaptiveDelta', 'adapts δ to each update’s'],
    [rollback && 'trustRegion.rollback', 'undoes a stage on its updates’'],
  ] as const)
    if (setting && config.certificate.heldOutProblems === 0)
      throw new ConfigError(
        setting,
        `${what} held-out improvement, so it needs certificate.heldOutProblems > 0 (e.g. 8)`,
      );
  return [
    ...(rollback ? [stageRollbackHook(units, rollback)] : []),
    ...(adaptiveDelta ? [adaptiveDeltaHook(units, adaptiveDelta)] : []),
  ];
}
