import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { FileFormatError } from './errors.js';
import { describeLimit, formatBytes, limitOf, type InputLimitName } from './limits.js';

/**
 * The one way teamtr reads a file it was pointed at: regular files only (a device, FIFO or
 * socket is refused, never read), the size taken from the open descriptor (fstat, so a symlink
 * swapped after a check cannot slip past it), and a hard cap while reading (a file that grows
 * past the limit mid-read is refused too). /dev/zero as a config file, a FIFO as a weight file,
 * config.json linked to /dev/urandom: each is a clear error at once, not gigabytes or a hang.
 *
 * Opening uses O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
 * On a regular file the flag changes nothing.
 */

/** How big a file may be: one of the named limits (util/limits.ts) or a fixed byte count. */
export type FileSizeLimit = InputLimitName | { bytes: number; hint: string };

export interface BoundedReadOptions {
  limit: FileSizeLimit;
  /** What the file is, for errors ("a config file", "tokenizer.json"). */
  what: string;
}

const openFlags = constants.O_RDONLY | constants.O_NONBLOCK;

/** The open descriptor of a regular file and its size. */
export interface OpenedRegularFile {
  handle: FileHandle;
  size: number;
}

/** Opens a regular file for reading, or throws a FileFormatError saying what it is instead. */
export async function openRegularFile(filePath: string, what: string): Promise<OpenedRegularFile> {
  let handle: FileHandle;
  try {
    handle = await open(filePath, openFlags);
  } catch (error) {
    throw openError(filePath, what, error);
  }
  try {
    const stats = await handle.stat();
    refuseIrregular(filePath, what, stats);
    return { handle, size: stats.size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Reads a whole regular file, refusing it past its limit (checked before and while reading). */
export async function readBoundedFile(
  filePath: string,
  options: BoundedReadOptions,
): Promise<Buffer> {
  const maxBytes = limitBytes(options.limit);
  const { handle, size } = await openRegularFile(filePath, options.what);
  try {
    const capped = new CappedRead(filePath, options, size, maxBytes);
    for (;;) {
      const { buffer, length } = capped.target();
      const { bytesRead } = await handle.read(buffer, 0, length, null);
      if (!capped.add(buffer, bytesRead)) return capped.result();
    }
  } finally {
    await handle.close();
  }
}

export async function readBoundedText(
  filePath: string,
  options: BoundedReadOptions,
): Promise<string> {
  return (await readBoundedFile(filePath, options)).toString('utf8');
}

/**
 * The synchronous twin of openRegularFile: the descriptor of a regular file and its size, for
 * code that reads parts of a file (a header first). The caller closes the descriptor.
 */
export function openRegularFileSync(
  filePath: string,
  what: string,
): { descriptor: number; size: number } {
  let descriptor: number;
  try {
    descriptor = openSync(filePath, openFlags);
  } catch (error) {
    throw openError(filePath, what, error);
  }
  try {
    const stats = fstatSync(descriptor);
    refuseIrregular(filePath, what, stats);
    return { descriptor, size: stats.size };
  } catch (error) {
    closeSync(descriptor);
    throw error;
  }
}

/** The synchronous twin of readBoundedFile, for code that cannot await (format detection). */
export function readBoundedFileSync(filePath: string, options: BoundedReadOptions): Buffer {
  const maxBytes = limitBytes(options.limit);
  const { descriptor, size } = openRegularFileSync(filePath, options.what);
  try {
    const capped = new CappedRead(filePath, options, size, maxBytes);
    for (;;) {
      const { buffer, length } = capped.target();
      if (!capped.add(buffer, readSync(descriptor, buffer, 0, length, null)))
        return capped.result();
    }
  } finally {
    closeSync(descriptor);
  }
}

export function readBoundedTextSync(filePath: string, options: BoundedReadOptions): string {
  return readBoundedFileSync(filePath, options).toString('utf8');
}

/**
 * The bytes read so far, never more than maxBytes + 1: one read for a file that keeps the size
 * it reported, more for /proc files (which report 0) or a file growing while it is read. A file
 * that reports more than maxBytes is refused before any read, one that grows past it as it does.
 */
class CappedRead {
  private readonly chunks: Buffer[] = [];
  private total = 0;
  private wanted: number;

  constructor(
    private readonly filePath: string,
    private readonly options: BoundedReadOptions,
    reportedSize: number,
    private readonly maxBytes: number,
  ) {
    refuseSize(filePath, options, reportedSize, maxBytes);
    this.wanted = Math.min(reportedSize, maxBytes) + 1;
  }

  target(): { buffer: Buffer; length: number } {
    const buffer = Buffer.allocUnsafe(Math.max(this.wanted, 64 * 1024));
    return { buffer, length: Math.min(buffer.length, this.maxBytes + 1 - this.total) };
  }

  /** Keeps a read's bytes; false at the end of the file. */
  add(buffer: Buffer, bytesRead: number): boolean {
    if (bytesRead === 0) return false;
    this.chunks.push(buffer.subarray(0, bytesRead));
    this.total += bytesRead;
    if (this.total > this.maxBytes) refuseSize(this.filePath, this.options, null, this.maxBytes);
    this.wanted = 64 * 1024;
    return true;
  }

  result(): Buffer {
    return this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.total);
  }
}

function limitBytes(limit: FileSizeLimit): number {
  return typeof limit === 'string' ? limitOf(limit) : limit.bytes;
}

function refuseSize(
  filePath: string,
  options: BoundedReadOptions,
  /** null: read past the limit (the file grew, or reported size 0), no exact size to quote. */
  size: number | null,
  maxBytes: number,
): void {
  if (size !== null && size <= maxBytes) return;
  const allowed =
    typeof options.limit === 'string'
      ? describeLimit(options.limit)
      : `${formatBytes(maxBytes)}; ${options.limit.hint}`;
  const figure = size === null ? `more than ${formatBytes(maxBytes)}` : formatBytes(size);
  throw new FileFormatError(filePath, `is ${figure}; ${options.what} is at most ${allowed}`);
}

/** What a path that is not a regular file is, in words. */
function kindOf(stats: Stats): string | null {
  if (stats.isFile()) return null;
  if (stats.isDirectory()) return 'a directory';
  if (stats.isCharacterDevice()) return 'a character device (such as /dev/zero)';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isFIFO()) return 'a named pipe (FIFO)';
  if (stats.isSocket()) return 'a socket';
  return 'not a regular file';
}

function refuseIrregular(filePath: string, what: string, stats: Stats): void {
  const kind = kindOf(stats);
  if (kind === null) return;
  throw new FileFormatError(
    filePath,
    `is ${kind}, not a regular file; give the path of ${what} on disk`,
  );
}

function openError(filePath: string, what: string, error: unknown): Error {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new FileFormatError(filePath, `file not found (${what})`);
  if (code === 'EISDIR')
    return new FileFormatError(filePath, `is a directory, not a regular file; give ${what}`);
  if (code === 'ENXIO')
    return new FileFormatError(filePath, `is a socket, not a regular file; give ${what}`);
  if (code === 'ENOTDIR')
    return new FileFormatError(filePath, `a part of this path is a file, not a directory`);
  if (code === 'EACCES' || code === 'EPERM')
    return new FileFormatError(filePath, `permission denied: cannot read ${what}`);
  if (code === 'ELOOP')
    return new FileFormatError(filePath, 'too many levels of symbolic links (a link loop?)');
  return error as Error;
}
