import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';

/**
 * Turning a request path into a file inside one directory, refusing everything that could
 * reach outside it: "..", absolute or encoded separators, NUL bytes, and symlinks (or a
 * symlinked parent) whose real target lies outside the directory.
 */

export type SegmentsResult = { ok: true; segments: string[] } | { ok: false; reason: string };

/**
 * Splits a raw URL path ("/a/b%20c") into decoded segments. Refuses (rather than normalizes)
 * "." and ".." and segments that decode to a separator, so nothing is resolved before the
 * containment check.
 */
export function decodePathSegments(rawPath: string): SegmentsResult {
  const parts = rawPath.split('/').slice(1);
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  const segments: string[] = [];
  for (const part of parts) {
    let segment: string;
    try {
      segment = decodeURIComponent(part);
    } catch {
      return { ok: false, reason: `malformed percent-encoding in "${part}"` };
    }
    if (segment === '' || segment === '.' || segment === '..')
      return { ok: false, reason: `path segment "${segment}" is not allowed` };
    if (/[/\\\0]/.test(segment))
      return { ok: false, reason: `path segment "${part}" holds a separator or NUL` };
    segments.push(segment);
  }
  return { ok: true, segments };
}

export function isInside(rootReal: string, candidate: string): boolean {
  const relative = path.relative(rootReal, candidate);
  return (
    relative === '' ||
    (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
  );
}

export type ResolvedFile =
  | { kind: 'file'; path: string; size: number }
  | { kind: 'missing' }
  | { kind: 'refused'; reason: string };

/** The real path of `segments` under `rootReal` (itself a real path), if it is a regular file inside it. */
export async function resolveFileInside(
  rootReal: string,
  segments: readonly string[],
): Promise<ResolvedFile> {
  const candidate = path.join(rootReal, ...segments);
  if (!isInside(rootReal, candidate))
    return { kind: 'refused', reason: 'outside the run directory' };
  let real: string;
  try {
    real = await realpath(candidate);
  } catch (error) {
    if (
      (error as NodeJS.ErrnoException).code === 'ENOENT' ||
      (error as NodeJS.ErrnoException).code === 'ENOTDIR'
    )
      return { kind: 'missing' };
    throw error;
  }
  if (!isInside(rootReal, real))
    return { kind: 'refused', reason: 'a link that leads outside the run directory' };
  const info = await stat(real);
  if (!info.isFile()) return { kind: 'refused', reason: 'not a regular file' };
  return { kind: 'file', path: real, size: info.size };
}
