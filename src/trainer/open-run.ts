import { getTask, type Task } from '../tasks/index.js';
import { parseWithSchema } from '../util/schema.js';
import { buildTeam, type BuiltTeam } from './build-team.js';
import { trainConfigSchema, type TrainConfig } from './config.js';
import { RunDirectory } from './run-directory.js';
import { schedules } from './schedules.js';

export interface OpenedRun {
  run: RunDirectory;
  config: TrainConfig;
  task: Task;
  built: BuiltTeam;
}

/** A run's team with the weights of its latest checkpoint (for eval, serve, swap, export). */
export async function openRun(directory: string): Promise<OpenedRun> {
  const run = await RunDirectory.open(directory);
  const config = parseWithSchema(trainConfigSchema, await run.readConfig(), `${directory}/config.json`);
  const task = await getTask(config.task, 'task');
  const built = await buildTeam(config, task, schedules[config.schedule]);
  if (run.hasCheckpoint()) await run.restoreCheckpoint(built.units, { truncateMetrics: false });
  return { run, config, task, built };
}
