import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TaskInput } from '../trainer/setup/task-source.js';
import { TeamtrError } from '../util/errors.js';

/**
 * `--task-module FILE`: a JavaScript or TypeScript module whose default export (or `task`
 * export) is a task, either `{ name, problems: { train, eval }, reward }` or a Task object.
 * TypeScript modules load through tsx when it is installed.
 */
export async function loadTaskModule(file: string): Promise<TaskInput> {
  const resolved = path.resolve(file);
  if (!existsSync(resolved))
    throw new TeamtrError(`--task-module ${file}: no such file (give a .js, .mjs or .ts module)`);
  if (/\.[cm]?ts$/.test(resolved)) await registerTypeScript(file);
  let module: { default?: unknown; task?: unknown };
  try {
    module = (await import(pathToFileURL(resolved).href)) as typeof module;
  } catch (error) {
    throw new TeamtrError(
      `--task-module ${file}: the module failed to load: ${(error as Error).message}`,
    );
  }
  const task = module.default ?? module.task;
  if (task === null || typeof task !== 'object')
    throw new TeamtrError(
      `--task-module ${file}: export default a task — { name, problems: { train, eval }, reward } or a Task object (got ${task === undefined ? 'no default or `task` export' : typeof task})`,
    );
  return task as TaskInput;
}

async function registerTypeScript(file: string): Promise<void> {
  try {
    const { register } = (await import('tsx/esm/api')) as { register: () => unknown };
    register();
  } catch {
    throw new TeamtrError(
      `--task-module ${file} is TypeScript: install tsx (npm i -D tsx) to load it, or compile it to .js`,
    );
  }
}
