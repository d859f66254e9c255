import { existsSync, mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * `mkdir -p` that fails with the real cause. Node's recursive mkdir reports ENOENT when a
 * missing directory cannot be made because its parent is on a read-only file system (or is not
 * writable), which reads as "a path is missing"; made one level at a time, the first level that
 * fails says why (EROFS, EACCES, ENOTDIR, ENAMETOOLONG), with its path.
 */
export async function makeDirectory(directory: string): Promise<void> {
  try {
    await mkdir(directory, { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    for (const level of missingLevels(directory)) await mkdir(level).catch(unlessMadeMeanwhile);
  }
}

/** makeDirectory, synchronously. */
export function makeDirectorySync(directory: string): void {
  try {
    mkdirSync(directory, { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    for (const level of missingLevels(directory)) {
      try {
        mkdirSync(level);
      } catch (levelError) {
        unlessMadeMeanwhile(levelError);
      }
    }
  }
}

/** The directories from the first missing ancestor of `directory` down to it. */
function missingLevels(directory: string): string[] {
  const levels: string[] = [];
  for (let level = path.resolve(directory); !existsSync(level); level = path.dirname(level)) {
    levels.unshift(level);
    if (path.dirname(level) === level) break;
  }
  return levels;
}

function unlessMadeMeanwhile(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
}
