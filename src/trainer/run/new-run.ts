import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { recoverInterruptedReplace } from '../../io/atomic.js';
import { RunDirectoryError } from './run-directory-error.js';
import { makeDirectorySync } from '../../util/make-directory.js';
import { isAtomicWriteLeftover, isRunEntry, leftoverOf, runFiles } from './run-files.js';
import { runLockFile } from './run-lock.js';

/**
 * Makes the directory of a new run (and its parents), or says in words why it cannot be made:
 * a name longer than the file system allows, a parent that is a file, a read-only or
 * unwritable disk. Refuses a path that exists and is not a directory, or a directory holding
 * anything but a run that never reached its first checkpoint.
 */
export function makeRunDirectory(directory: string): void {
  if (existsSync(directory)) {
    if (!statSync(directory).isDirectory())
      throw new RunDirectoryError(
        directory,
        `${directory} exists and is not a directory`,
        'anotherDirectory',
      );
    if (!readdirSync(directory).every((name) => isRunEntry(name) || name === runFiles.checkpoint))
      throw notEmpty(directory);
    return;
  }
  try {
    makeDirectorySync(directory);
  } catch (error) {
    throw cannotCreate(directory, error);
  }
}

function cannotCreate(directory: string, error: unknown): unknown {
  const { code } = error as NodeJS.ErrnoException;
  const cannot = `cannot create run directory ${directory}`;
  if (code === 'ENAMETOOLONG')
    return new RunDirectoryError(
      directory,
      `${cannot}: a name in it is longer than the file system allows (${longestName(directory)} bytes; most allow 255, and a whole path 4096)`,
      'shorterPath',
    );
  if (code === 'ENOTDIR')
    return new RunDirectoryError(
      directory,
      `${cannot}: ${fileAncestor(directory) ?? 'a parent'} is a file, not a directory`,
      'anotherDirectory',
    );
  if (code === 'EROFS')
    return new RunDirectoryError(
      directory,
      `${cannot}: ${existingAncestor(directory)} is on a read-only file system`,
      'writableDisk',
    );
  if (code === 'EACCES' || code === 'EPERM')
    return new RunDirectoryError(
      directory,
      `${cannot}: permission to write in ${existingAncestor(directory)} is denied`,
      'permittedDirectory',
    );
  return error;
}

function longestName(directory: string): number {
  return Math.max(
    ...path
      .resolve(directory)
      .split(path.sep)
      .map((name) => Buffer.byteLength(name)),
  );
}

/** The nearest ancestor of `directory` that exists and is not a directory. */
function fileAncestor(directory: string): string | null {
  for (let level = path.dirname(path.resolve(directory)); ; level = path.dirname(level)) {
    if (existsSync(level) && !statSync(level).isDirectory()) return level;
    if (path.dirname(level) === level) return null;
  }
}

/** The nearest existing ancestor of `directory`: where the first new directory would go. */
function existingAncestor(directory: string): string {
  let level = path.resolve(directory);
  while (!existsSync(level) && path.dirname(level) !== level) level = path.dirname(level);
  return level;
}

function notEmpty(directory: string): RunDirectoryError {
  return new RunDirectoryError(
    directory,
    `run directory ${directory} is not empty`,
    'anotherDirectory',
  );
}

/**
 * Empties a directory that holds a run which never reached its first checkpoint, but for the
 * lock this trainer holds; refuses any other non-empty directory (a run with a checkpoint,
 * even a damaged one, is resumed or left alone).
 */
export async function clearUnstartedRun(directory: string): Promise<void> {
  const entries = readdirSync(directory).filter((name) => !isLockEntry(name));
  if (entries.length === 0) return;
  await recoverInterruptedReplace(path.join(directory, runFiles.checkpoint));
  if (existsSync(path.join(directory, runFiles.checkpoint)))
    throw new RunDirectoryError(
      directory,
      `run directory ${directory} holds a run with a checkpoint`,
      'resumeOrAnother',
    );
  if (existsSync(path.join(directory, runFiles.summary)))
    throw new RunDirectoryError(
      directory,
      `run directory ${directory} holds a run that ended (${runFiles.summary})`,
      'anotherDirectory',
    );
  const ours =
    entries.every(isRunEntry) &&
    (entries.includes(runFiles.marker) || entries.every(isAtomicWriteLeftover));
  if (!ours) throw notEmpty(directory);
  for (const entry of readdirSync(directory).filter((name) => !isLockEntry(name)))
    rmSync(path.join(directory, entry), { recursive: true, force: true });
}

/** running.json, or a temporary file of it (run-lock.ts). */
function isLockEntry(name: string): boolean {
  return (leftoverOf(name) ?? name) === runLockFile;
}
