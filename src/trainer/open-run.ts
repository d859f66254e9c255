import type { Task } from '../tasks/index.js';
import { parseWithSchema } from '../util/schema.js';
import { buildTeam, type BuiltTeam } from './setup/build-team.js';
import { trainConfigSchema, type TrainConfig } from './config/train-config.js';
import { RunDirectory } from './run/run-directory.js';
import { schedules } from './schedules.js';
import { configAtStage } from './swap/swap-plan.js';
import { resolveRunTask, type TaskInput } from './setup/task-source.js';

export interface OpenedRun {
  run: RunDirectory;
  config: TrainConfig;
  task: Task;
  built: BuiltTeam;
}

/** A run's team with the weights of its latest checkpoint (for eval, serve, swap, export). */
export async function openRun(
  directory: string,
  options: {
    /** The run's task when it was defined in code (train({ task }), --task-module). */
    task?: TaskInput;
  } = {},
): Promise<OpenedRun> {
  const run = await RunDirectory.open(directory);
  const config = parseWithSchema(
    trainConfigSchema,
    await run.readConfig(),
    `${directory}/config.json`,
  );
  const task = await resolveRunTask(config, options.task);
  // After a swap the checkpoint holds the incoming model: build the team as of its stage.
  const saved = run.hasCheckpoint() ? await run.readCheckpointState() : null;
  const built = await buildTeam(
    configAtStage(config, task, saved?.stage ?? 0),
    task,
    schedules[config.schedule],
  );
  if (run.hasCheckpoint()) await run.restoreCheckpoint(built.units, { truncateMetrics: false });
  return { run, config, task, built };
}
