import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { loadIsolatedTask } from '../tasks/task-module/isolated-task.js';
import type { TaskInput } from '../trainer/setup/task-source.js';
import { TeamtrError } from '../util/errors.js';

/**
 * `--task-module FILE`: a JavaScript or TypeScript module (.js, .mjs, .cjs, .ts, .mts, .cts, in
 * an ES module or a CommonJS project) whose default export (or `task` export, or
 * `module.exports`) is a task: `{ name, problems: { train, eval }, reward }` or a Task object.
 * Its code runs on a worker thread under time and memory limits (tasks/task-module/), so a hung
 * or crashing reward stops the run with a clear error instead of losing it. TypeScript modules
 * load through tsx when it is installed.
 */
export async function loadTaskModule(file: string): Promise<TaskInput> {
  const resolved = path.resolve(file);
  if (!existsSync(resolved) || !statSync(resolved).isFile())
    throw new TeamtrError(
      `--task-module ${file}: no such file (give a .js, .mjs, .cjs, .ts, .mts or .cts module)`,
    );
  return loadIsolatedTask(resolved, `--task-module ${file}`);
}
