import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/**
 * Runs `script` (a snippet that imports the sources by path from the repository's root, e.g.
 * `import('./src/backend/native.ts')`) in a fresh Node process with tsx, this process's
 * environment plus `environment`: for settings read once per process, such as TEAMTR_ISA.
 */
export function runInChild(
  script: string,
  environment: Record<string, string>,
): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: root,
    env: { ...process.env, ...environment },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
}
