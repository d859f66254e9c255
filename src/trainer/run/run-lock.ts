import { existsSync, readFileSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { writeJsonAtomic } from '../../io/atomic.js';
import { TeamtrError } from '../../util/errors.js';

/**
 * `running.json` in a run directory while a trainer works on it: who (pid, host) and when it
 * last finished a stage. It keeps a second trainer from writing into a live run, and lets the
 * dashboard tell a crashed run (the process is gone) from a running one. A run that ends or is
 * interrupted removes it; one killed leaves it behind, naming a process that no longer exists.
 */
export const runLockFile = 'running.json';

/** A lock whose process left no word for this long is taken as dead on another host. */
const heartbeatTimeoutMilliseconds = 30 * 60 * 1000;

interface RunLock {
  pid: number;
  host: string;
  startedAt: string;
  heartbeatAt: string;
}

function readLock(directory: string): RunLock | null {
  const lockPath = path.join(directory, runLockFile);
  if (!existsSync(lockPath)) return null;
  try {
    const lock = JSON.parse(readFileSync(lockPath, 'utf8')) as Partial<RunLock>;
    if (typeof lock.pid !== 'number' || typeof lock.host !== 'string') return null;
    return lock as RunLock;
  } catch {
    return null; // a lock we cannot read protects nothing
  }
}

/** Whether a trainer is working on `directory` now (its process alive, or recently heard of). */
export function isRunActive(directory: string): boolean {
  const lock = readLock(directory);
  if (!lock) return false;
  if (lock.host !== hostname())
    return Date.now() - Date.parse(lock.heartbeatAt) < heartbeatTimeoutMilliseconds;
  if (lock.pid === process.pid) return true;
  try {
    process.kill(lock.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Refuses to touch a run another live trainer is writing. */
export function assertNotActive(directory: string): void {
  const lock = readLock(directory);
  if (lock && lock.pid !== process.pid && isRunActive(directory))
    throw new TeamtrError(
      `run directory ${directory} is being trained by process ${lock.pid} on ${lock.host} (${runLockFile}); wait for it to end or stop it first`,
    );
}

/** Takes the run for this process; `beat` after every stage, `release` when done. */
export async function holdRun(directory: string): Promise<{
  beat: () => Promise<void>;
  release: () => void;
}> {
  assertNotActive(directory);
  const startedAt = new Date().toISOString();
  const write = () =>
    writeJsonAtomic(path.join(directory, runLockFile), {
      pid: process.pid,
      host: hostname(),
      startedAt,
      heartbeatAt: new Date().toISOString(),
    } satisfies RunLock);
  await write();
  return {
    beat: write,
    release: () => rmSync(path.join(directory, runLockFile), { force: true }),
  };
}
