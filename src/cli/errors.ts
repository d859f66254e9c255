import { TeamtrError } from '../util/errors.js';

/**
 * Prints an error for a person: our own errors (bad input, with what to do) without a stack
 * trace; anything else is a bug, so it keeps its stack. Returns the exit code.
 */
export function reportError(error: unknown): number {
  if (error instanceof TeamtrError) {
    process.stderr.write(`teamtr: ${error.name}: ${error.message}\n`);
    return 2;
  }
  const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`teamtr: internal error (please report it):\n${stack}\n`);
  return 1;
}
