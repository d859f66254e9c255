import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { readBoundedTextSync } from '../../util/bounded-file.js';
import { describeThrown } from '../../util/describe-value.js';
import { TeamtrError } from '../../util/errors.js';

/**
 * Loads a user's task module the way its own project would run it. Node decides a file's module
 * system by its extension (.mjs/.mts ES module, .cjs/.cts CommonJS) and, for .js/.ts, by the
 * nearest package.json's "type" (CommonJS when absent, as `npm init -y` writes it). TypeScript
 * goes through tsx: CommonJS files through its require (so `export default` compiles to
 * `exports.default`), ES modules through its loader hooks. Loading a CommonJS .ts through the
 * ES loader alone is what failed with "Cannot require() ES Module … in a cycle".
 */

export type ModuleSystem = 'module' | 'commonjs';

const typeScript = /\.[cm]?ts$/;

export function moduleSystemOf(file: string): ModuleSystem {
  if (/\.m[jt]s$/.test(file)) return 'module';
  if (/\.c[jt]s$/.test(file)) return 'commonjs';
  for (let directory = path.dirname(file); ; directory = path.dirname(directory)) {
    const manifest = path.join(directory, 'package.json');
    if (existsSync(manifest)) {
      const text = readBoundedTextSync(manifest, { limit: 'jsonBytes', what: 'package.json' });
      try {
        const type = (JSON.parse(text) as { type?: unknown }).type;
        return type === 'module' ? 'module' : 'commonjs';
      } catch {
        return 'commonjs';
      }
    }
    if (path.dirname(directory) === directory) return 'commonjs';
  }
}

/** The task a module exports: `export default`, `export const task`, or `module.exports`. */
export async function importTaskExport(file: string, flag: string): Promise<unknown> {
  const system = moduleSystemOf(file);
  let namespace: Record<string, unknown>;
  try {
    namespace = typeScript.test(file)
      ? await importTypeScript(file, system, flag)
      : ((await import(pathToFileURL(file).href)) as Record<string, unknown>);
  } catch (error) {
    if (error instanceof TeamtrError) throw error;
    throw new TeamtrError(
      `${flag}: the module failed to load: ${describeThrown(error)}${hint(error, file, system)}`,
    );
  }
  return taskOf(namespace);
}

async function importTypeScript(
  file: string,
  system: ModuleSystem,
  flag: string,
): Promise<Record<string, unknown>> {
  const api = system === 'commonjs' ? 'tsx/cjs/api' : 'tsx/esm/api';
  let loader: {
    require?: (id: string, from: string) => unknown;
    register?: () => unknown;
  };
  try {
    loader = (await import(api)) as typeof loader;
  } catch {
    throw new TeamtrError(
      `${flag} is TypeScript: install tsx (npm i -D tsx) to load it, or compile it to .js`,
    );
  }
  if (system === 'commonjs') return { default: loader.require!(file, import.meta.url) };
  loader.register!();
  return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
}

/**
 * CommonJS modules arrive as `{ default: module.exports }`; TypeScript or Babel output compiled
 * to CommonJS keeps `export default` at `module.exports.default` (with `__esModule`).
 */
function taskOf(namespace: Record<string, unknown>): unknown {
  let candidate = namespace.default ?? namespace.task;
  for (let depth = 0; depth < 2 && isWrapper(candidate); depth++) {
    const wrapper = candidate as Record<string, unknown>;
    candidate = wrapper.default ?? wrapper.task;
  }
  return candidate;
}

function isWrapper(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const record = value as Record<string, unknown>;
  return !('name' in record) && ('default' in record || 'task' in record);
}

/** What to do about the common ways a module fails to load. */
function hint(error: unknown, file: string, system: ModuleSystem): string {
  const message = describeThrown(error);
  if (/Cannot use import statement outside a module|Unexpected token 'export'/.test(message))
    return system === 'commonjs'
      ? `; ${path.basename(file)} uses import/export but its package.json makes .js files CommonJS: rename it to .mjs, set "type": "module" in package.json, or use require() and module.exports`
      : '';
  if (/Cannot find (module|package)/.test(message))
    return '; install the package it imports in the project that holds the module (npm i …)';
  return '';
}
