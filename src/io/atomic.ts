import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readdir, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { TeamtrError } from '../util/errors.js';
import { makeDirectory } from '../util/make-directory.js';

/**
 * Writes that either happen completely or not at all, so a crash or a full disk never leaves
 * a half-written file or checkpoint where a good one used to be.
 *
 * Files: write a sibling temp file, fsync it, rename it over the target, fsync the directory.
 * Directories: fill a sibling temp directory, fsync it, move the old directory aside, move the
 * new one in, delete the old one. POSIX cannot rename onto a non-empty directory, so there is
 * a moment with the target absent; a crash in it leaves the old directory under its aside name,
 * and `recoverInterruptedReplace` (called by every replace and by checkpoint loading) puts it
 * back. Temp names carry the writer's pid so a live writer's files are never mistaken for
 * leftovers.
 */

export type FileContents = string | Uint8Array | readonly Uint8Array[];

/** Temp paths this process is writing right now (they carry our pid but are not stale). */
const activeTempPaths = new Set<string>();

function tempSibling(target: string, kind: 'tmp' | 'old'): string {
  const suffix = `${process.pid}-${randomBytes(6).toString('hex')}`;
  return path.join(path.dirname(target), `.${path.basename(target)}.${kind}-${suffix}`);
}

/**
 * Writes `contents` to `filePath` atomically, creating missing parent directories. Chunks are
 * written in order, never concatenated, so large files need no second copy in memory.
 */
export async function writeFileAtomic(filePath: string, contents: FileContents): Promise<void> {
  const target = path.resolve(filePath);
  await makeDirectory(path.dirname(target));
  const temp = tempSibling(target, 'tmp');
  activeTempPaths.add(temp);
  try {
    const handle = await open(temp, 'wx');
    try {
      const chunks =
        typeof contents === 'string'
          ? [Buffer.from(contents, 'utf8')]
          : contents instanceof Uint8Array
            ? [contents]
            : contents;
      for (const chunk of chunks) await writeAll(handle, chunk);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, target);
    await syncDirectory(path.dirname(target));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  } finally {
    activeTempPaths.delete(temp);
  }
}

/** `FileHandle.write` may write less than asked; loop until every byte is down. */
async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let done = 0; done < chunk.length;) {
    const { bytesWritten } = await handle.write(chunk, done, chunk.length - done);
    done += bytesWritten;
  }
}

/** Writes `value` as indented JSON with a trailing newline, atomically. */
export async function writeJsonAtomic(filePath: string, value: unknown): Promise<void> {
  await writeFileAtomic(filePath, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Builds a new version of `targetDir` with `fill(tempDir)` in a sibling temp directory, then
 * swaps it into place. If `fill` throws, the previous directory is untouched and the temp
 * directory is removed. Leftovers of earlier interrupted replaces are cleaned up first.
 */
export async function replaceDirectoryAtomic(
  targetDir: string,
  fill: (tempDir: string) => Promise<void>,
): Promise<void> {
  const target = path.resolve(targetDir);
  await makeDirectory(path.dirname(target));
  await recoverInterruptedReplace(target);
  const existing = await lstat(target).catch(() => null);
  if (existing && !existing.isDirectory()) {
    throw new TeamtrError(
      `${target} exists and is not a directory; move it away or choose another path`,
    );
  }
  const temp = tempSibling(target, 'tmp');
  activeTempPaths.add(temp);
  try {
    await mkdir(temp);
    await fill(temp);
    await syncTree(temp);
    await swapIntoPlace(temp, target);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    throw error;
  } finally {
    activeTempPaths.delete(temp);
  }
}

async function swapIntoPlace(temp: string, target: string): Promise<void> {
  const aside = tempSibling(target, 'old');
  activeTempPaths.add(aside);
  try {
    let movedAside = true;
    try {
      await rename(target, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      movedAside = false;
    }
    try {
      await rename(temp, target);
    } catch (error) {
      if (movedAside) await rename(aside, target);
      throw error;
    }
    await syncDirectory(path.dirname(target));
    if (movedAside) await rm(aside, { recursive: true, force: true });
  } finally {
    activeTempPaths.delete(aside);
  }
}

const leftoverPattern = /^\.(.*)\.(tmp|old)-(\d+)-[0-9a-f]+$/;

/**
 * Repairs what an interrupted `replaceDirectoryAtomic` (or `writeFileAtomic`) of `target` left
 * behind by a writer that is no longer running: restores the previous directory if the crash
 * came between the two renames, and deletes temp copies. Safe to call at any time.
 */
export async function recoverInterruptedReplace(target: string): Promise<void> {
  const resolved = path.resolve(target);
  const parent = path.dirname(resolved);
  const base = path.basename(resolved);
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const name of names.sort()) {
    const match = leftoverPattern.exec(name);
    if (!match || match[1] !== base) continue;
    const leftover = path.join(parent, name);
    if (isWriterRunning(Number(match[3]), leftover)) continue;
    const targetExists = (await lstat(resolved).catch(() => null)) !== null;
    if (match[2] === 'old' && !targetExists) await rename(leftover, resolved);
    else await rm(leftover, { recursive: true, force: true });
  }
}

function isWriterRunning(pid: number, leftover: string): boolean {
  if (pid === process.pid) return activeTempPaths.has(leftover);
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** fsyncs every file and directory under `root` (and `root`), so the rename publishes durable data. */
async function syncTree(root: string): Promise<void> {
  for (const entry of await readdir(root, { withFileTypes: true })) {
    const child = path.join(root, entry.name);
    if (entry.isDirectory()) await syncTree(child);
    else if (entry.isFile()) {
      const handle = await open(child, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  }
  await syncDirectory(root);
}

/** fsyncs a directory so a rename in it survives a power cut; a no-op where the OS refuses. */
async function syncDirectory(directory: string): Promise<void> {
  let handle;
  try {
    handle = await open(directory, 'r');
    await handle.sync();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EACCES')
      throw error;
  } finally {
    await handle?.close();
  }
}
