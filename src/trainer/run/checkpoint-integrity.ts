import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { FileFormatError } from '../../util/errors.js';

/**
 * What a checkpoint vouches for: the SHA-256 of every file it holds (weights, adapters,
 * optimizer moments, tokenizers) and of the metrics.jsonl prefix it corresponds to. Resume
 * verifies both before it trusts anything, so a flipped bit in a weight file or an edited or
 * truncated metrics file is refused with what to do, never trained on or summarized silently.
 */
export const checkpointIntegritySchema = z.strictObject({
  /** Path relative to the checkpoint directory → hex SHA-256. */
  files: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)),
  /** SHA-256 of metrics.jsonl's first `metricsBytes` bytes. */
  metricsSha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type CheckpointIntegrity = z.output<typeof checkpointIntegritySchema>;

/** Hashes every file under `directory` except those named in `skip` (relative paths). */
export async function hashDirectory(
  directory: string,
  skip: readonly string[],
): Promise<Record<string, string>> {
  const hashes: Record<string, string> = {};
  for (const relative of listFiles(directory).sort()) {
    if (skip.includes(relative)) continue;
    hashes[relative] = await hashFile(path.join(directory, relative), Infinity);
  }
  return hashes;
}

/** SHA-256 of a file's first `bytes` bytes (all of it for Infinity). */
export function hashFile(filePath: string, bytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    if (bytes === 0) return resolve(hash.digest('hex'));
    const end = Number.isFinite(bytes) ? bytes - 1 : undefined;
    createReadStream(filePath, { end })
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/**
 * Checks a checkpoint against what it recorded when it was written; throws a FileFormatError
 * that names the damaged file and says what to do.
 */
export async function verifyCheckpoint(options: {
  checkpointDirectory: string;
  integrity: CheckpointIntegrity;
  metricsPath: string;
  metricsBytes: number;
}): Promise<void> {
  const { checkpointDirectory, integrity, metricsPath, metricsBytes } = options;
  for (const [relative, expected] of Object.entries(integrity.files)) {
    const filePath = path.join(checkpointDirectory, relative);
    if (!existsSync(filePath))
      throw new FileFormatError(
        filePath,
        'missing from the checkpoint, so the run directory was damaged; restore the file from a backup, or start a new run',
      );
    if ((await hashFile(filePath, Infinity)) !== expected)
      throw new FileFormatError(
        filePath,
        `the file does not match the checksum the checkpoint recorded (SHA-256 ${expected.slice(0, 12)}…): the file was changed or damaged after it was saved; restore it from a backup, or start a new run`,
      );
  }
  const metricsLength = existsSync(metricsPath) ? statSync(metricsPath).size : 0;
  if (metricsLength < metricsBytes)
    throw new FileFormatError(
      metricsPath,
      `the file holds ${metricsLength} bytes but the checkpoint was taken at ${metricsBytes}: records of stages before the checkpoint are lost, so a resumed run's summary would not cover them; restore metrics.jsonl from a backup, or start a new run`,
    );
  if ((await hashFile(metricsPath, metricsBytes)) !== integrity.metricsSha256)
    throw new FileFormatError(
      metricsPath,
      `the first ${metricsBytes} bytes (the records up to the checkpoint) were edited or damaged since the checkpoint was saved; restore metrics.jsonl from a backup, or start a new run`,
    );
}

function listFiles(directory: string, prefix = ''): string[] {
  return readdirSync(path.join(directory, prefix), { withFileTypes: true }).flatMap((entry) => {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    return entry.isDirectory() ? listFiles(directory, relative) : [relative];
  });
}
