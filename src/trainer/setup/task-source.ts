import {
  defineTask,
  getTask,
  taskFingerprint,
  type Task,
  type TaskDefinition,
} from '../../tasks/index.js';
import { ConfigError } from '../../util/errors.js';
import type { TrainConfig } from '../config/train-config.js';

/** A task object, or a definition `defineTask` turns into one. */
export type TaskInput = Task | TaskDefinition;

export function asTask(input: TaskInput): Task {
  return 'split' in input && typeof input.split === 'function'
    ? (input as Task)
    : defineTask(input as TaskDefinition);
}

/**
 * A run's task: built from its config, or (a task defined in code) the one the caller passes,
 * which must be the run's own: same name and the same data as its recorded fingerprint.
 */
export async function resolveRunTask(
  config: Pick<TrainConfig, 'task' | 'taskFingerprint'>,
  provided: TaskInput | undefined,
): Promise<Task> {
  const spec = config.task;
  if (spec.name !== 'code' && provided)
    throw new ConfigError(
      'task',
      `this run's task is "${spec.name}" from its config; drop the task given in code (or --task-module)`,
    );
  const task = spec.name === 'code' && provided ? asTask(provided) : await getTask(spec, 'task');
  if (spec.name === 'code' && task.name !== spec.task)
    throw new ConfigError(
      'task',
      `this run trains the task "${spec.task}", but the task given is "${task.name}"; pass the run's own task`,
    );
  if (config.taskFingerprint !== undefined) {
    const fingerprint = taskFingerprint(task);
    if (fingerprint !== config.taskFingerprint)
      throw new ConfigError(
        'task',
        `the data of task "${task.name}" changed since this run began (fingerprint ${config.taskFingerprint.slice(0, 12)}…, now ${fingerprint.slice(0, 12)}…); restore the run's own problems, or start a new run`,
      );
  }
  return task;
}
