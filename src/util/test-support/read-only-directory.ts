import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A directory nobody may write to, holding copies of what it was given. */
export interface ReadOnlyDirectory {
  path: string;
  /** What refuses a write there: a read-only file system (EROFS) or permissions (EACCES). */
  refusal: 'read-only file system' | 'permission denied';
  /** Makes it writable again and deletes it. */
  remove(): void;
}

/**
 * Copies `entries` (name → source path) into a fresh directory, then makes it read-only: a
 * read-only tmpfs mount where this process may mount (root), else permissions taken away, which
 * stop everyone but root. Either way a write there fails as it would on a read-only disk.
 */
export function readOnlyDirectory(entries: Readonly<Record<string, string>>): ReadOnlyDirectory {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-read-only-'));
  const mounted = tryMount(directory);
  for (const [name, source] of Object.entries(entries))
    cpSync(source, path.join(directory, name), { recursive: true });
  if (mounted) {
    execFileSync('mount', ['-o', 'remount,ro', directory]);
    return {
      path: directory,
      refusal: 'read-only file system',
      remove: () => {
        execFileSync('umount', [directory]);
        rmSync(directory, { recursive: true, force: true });
      },
    };
  }
  setWritable(directory, false);
  return {
    path: directory,
    refusal: 'permission denied',
    remove: () => {
      setWritable(directory, true);
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

function tryMount(directory: string): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', directory], {
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false; // a container without the right to mount: permissions instead
  }
}

function setWritable(target: string, writable: boolean): void {
  const isDirectory = statSync(target).isDirectory();
  if (writable) chmodSync(target, isDirectory ? 0o755 : 0o644);
  if (isDirectory)
    for (const entry of readdirSync(target)) setWritable(path.join(target, entry), writable);
  if (!writable) chmodSync(target, isDirectory ? 0o555 : 0o444);
}

/** A fresh empty directory inside `parent` would be refused: mkdirSync throws. */
export function canCreateIn(parent: string): boolean {
  try {
    mkdirSync(path.join(parent, `.probe-${process.pid}`));
    rmSync(path.join(parent, `.probe-${process.pid}`), { recursive: true });
    return true;
  } catch {
    return false;
  }
}
