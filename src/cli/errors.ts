import { TeamtrError } from '../util/errors.js';
import { cliMessage } from './run-directory-remedies.js';

/**
 * Prints an error for a person: our own errors (bad input, with what to do) without a stack
 * trace; anything else is a bug, so it keeps its stack. Returns the exit code.
 */
export function reportError(error: unknown): number {
  if (error instanceof TeamtrError) {
    process.stderr.write(`teamtr: ${error.name}: ${cliMessage(error)}\n`);
    return 2;
  }
  const system = systemErrorMessage(error);
  if (system) {
    process.stderr.write(`teamtr: ${system}\n`);
    return 2;
  }
  const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`teamtr: internal error (please report it):\n${stack}\n`);
  return 1;
}

/**
 * The machine refusing a file operation (full disk, no permission, read-only file system) is
 * not a bug: say which path and what to do. Writes are atomic, so what was saved before is
 * intact.
 */
function systemErrorMessage(error: unknown): string | null {
  const { code, path: target } = (error ?? {}) as NodeJS.ErrnoException;
  const where = target ? ` (${target})` : '';
  switch (code) {
    case 'ENOSPC':
    case 'EDQUOT':
      return `the disk is full${where}: free some space or point --run-dir / --out at another disk, then run again (with --resume for a training run); files written before are intact`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied${where}: choose a directory you can write to, or fix its permissions`;
    case 'EROFS':
      return `the file system is read-only${where}: choose a writable directory`;
    case 'ENAMETOOLONG':
      return `a file name is longer than the file system allows${where}: choose a shorter path`;
    case 'ENOTDIR':
      return `a part of the path is a file, not a directory${where}: choose another path`;
    case 'EMFILE':
    case 'ENFILE':
      return `too many open files${where}: raise the limit (ulimit -n) and run again`;
    default:
      return null;
  }
}
