import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { writeJsonAtomic } from '../../io/atomic.js';
import { readBoundedTextSync } from '../../util/bounded-file.js';
import { FileFormatError, TeamtrError } from '../../util/errors.js';

/**
 * `running.json` in a run directory while a trainer works on it: who (pid, the process's start
 * time, host) and when it last finished a stage. It keeps a second trainer from writing into a
 * live run, and lets the dashboard tell a crashed run (the process is gone) from a running one.
 * It is taken atomically: written whole to a temporary file, then hard-linked to its name, which
 * fails if the name exists; of two trainers started together exactly one gets it. A lock whose
 * process is gone — or whose PID now belongs to a process that started at another time — is
 * stale and taken over. A run that ends or is interrupted removes it; one killed leaves it.
 */
export const runLockFile = 'running.json';

/** A lock whose process left no word for this long is taken as dead on another host. */
const heartbeatTimeoutMilliseconds = 30 * 60 * 1000;

interface RunLock {
  pid: number;
  host: string;
  startedAt: string;
  heartbeatAt: string;
  /** The process's start time (/proc/<pid>/stat, clock ticks after boot); null where unknown. */
  processStart?: string | null;
  /** Names the holder (several may come from one process). Absent in older locks. */
  token?: string;
}

/** Tokens of the locks this process holds now. */
const heldHere = new Set<string>();

function lockPath(directory: string): string {
  return path.join(directory, runLockFile);
}

/** What teamtr writes is a few hundred bytes: anything past this is no lock of a trainer. */
const lockFileLimit = { bytes: 64 * 1024, hint: 'teamtr writes a few hundred bytes there' };

function readLockFile(file: string): RunLock | null {
  const text = readLockText(file);
  if (text === null) return null;
  try {
    const lock = JSON.parse(text) as Partial<RunLock>;
    if (typeof lock.pid !== 'number' || typeof lock.host !== 'string') return null;
    return lock as RunLock;
  } catch {
    return null; // a lock we cannot parse protects nothing
  }
}

/**
 * running.json's text through the bounded reader (null: absent), so a FIFO, a device or a huge
 * file in its place is a clear error at once, never a hang or gigabytes read.
 */
function readLockText(file: string): string | null {
  if (!existsSync(file)) return null;
  try {
    return readBoundedTextSync(file, { limit: lockFileLimit, what: 'a run lock' });
  } catch (error) {
    if (!existsSync(file)) return null; // released between the check and the read
    if (!(error instanceof FileFormatError) || error.file !== file) throw error;
    throw new FileFormatError(
      file,
      `${error.message.slice(file.length + 2)}; it is no lock a trainer wrote: if no trainer works on this run, delete it and run again`,
    );
  }
}

/** When process `pid` started (field 22 of /proc/<pid>/stat), or null where that is unknown. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the holder `lock` names is at work now. */
function isLive(lock: RunLock): boolean {
  if (lock.host !== hostname())
    return Date.now() - Date.parse(lock.heartbeatAt) < heartbeatTimeoutMilliseconds;
  if (lock.pid === process.pid) return lock.token === undefined || heldHere.has(lock.token);
  try {
    process.kill(lock.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // The PID is in use: by the holder, unless that process started at another time.
  const started = processStartTime(lock.pid);
  return !lock.processStart || !started || started === lock.processStart;
}

/** Whether a trainer is working on `directory` now (its process alive, or recently heard of). */
export function isRunActive(directory: string): boolean {
  const lock = readLockFile(lockPath(directory));
  return lock !== null && isLive(lock);
}

export interface HeldLock {
  /** Says the holder is alive (after every stage); refuses if another process took the lock. */
  beat(): Promise<void>;
  /** Gives the lock up (removes running.json if it is still this holder's). */
  release(): void;
}

/**
 * Takes the run for this holder, or refuses with who holds it. Stale locks are taken over:
 * moved aside under a unique name, and put back if what was moved turned out to be a live
 * holder's (one that took the lock in the meantime).
 */
export async function holdRun(directory: string): Promise<HeldLock> {
  const token = randomUUID();
  const startedAt = new Date().toISOString();
  const content = (): RunLock => ({
    pid: process.pid,
    host: hostname(),
    startedAt,
    heartbeatAt: new Date().toISOString(),
    processStart: processStartTime(process.pid),
    token,
  });
  for (let attempt = 0; attempt < 8; attempt++) {
    if (createLock(directory, content())) {
      heldHere.add(token);
      return heldLock(directory, token, content);
    }
    const holder = readLockFile(lockPath(directory));
    if (holder && isLive(holder))
      throw new TeamtrError(
        `run directory ${directory} is being trained by process ${holder.pid} on ${holder.host} (${runLockFile}); wait for it to end or stop it first`,
      );
    breakStaleLock(directory, holder);
  }
  throw new TeamtrError(
    `could not take ${runLockFile} in ${directory}: other processes keep taking and leaving it; try again`,
  );
}

function heldLock(directory: string, token: string, content: () => RunLock): HeldLock {
  const ours = () => readLockFile(lockPath(directory))?.token === token;
  return {
    beat: async () => {
      if (!ours())
        throw new TeamtrError(
          `${runLockFile} in ${directory} no longer names this trainer: another process took the run directory over; stop one of them and resume`,
        );
      await writeJsonAtomic(lockPath(directory), content());
    },
    release: () => {
      if (ours()) rmSync(lockPath(directory), { force: true });
      heldHere.delete(token);
    },
  };
}

/** Creates running.json holding `lock`, whole, unless it exists. */
function createLock(directory: string, lock: RunLock): boolean {
  const temporary = path.join(directory, `.${runLockFile}.tmp-${process.pid}-${hex()}`);
  writeFileSync(temporary, JSON.stringify(lock));
  try {
    linkSync(temporary, lockPath(directory));
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes(code ?? '')) throw error;
    throw new TeamtrError(
      `could not take ${runLockFile} in ${directory}: the filesystem refused to link a file to it (${code}); the lock needs hard links, so put the run directory on a local filesystem`,
    );
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** Removes the stale lock `judged` (null: unreadable), unless it changed since it was read. */
function breakStaleLock(directory: string, judged: RunLock | null): void {
  const aside = path.join(directory, `.${runLockFile}.old-${process.pid}-${hex()}`);
  try {
    renameSync(lockPath(directory), aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // already gone
    throw error;
  }
  const moved = readLockFile(aside);
  const same = judged === null ? moved === null : moved !== null && sameHolder(moved, judged);
  if (!same) {
    try {
      linkSync(aside, lockPath(directory)); // a holder's live lock: put it back
    } catch {
      // Another process took the name meanwhile; the holder finds out at its next beat.
    }
  }
  rmSync(aside, { force: true });
}

function sameHolder(a: RunLock, b: RunLock): boolean {
  return a.pid === b.pid && a.host === b.host && a.startedAt === b.startedAt && a.token === b.token;
}

function hex(): string {
  return randomBytes(6).toString('hex');
}
