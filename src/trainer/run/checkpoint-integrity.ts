import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { openRegularFile } from '../../util/bounded-file.js';
import { FileFormatError, type TeamtrError } from '../../util/errors.js';
import { RunDirectoryError } from './run-directory-error.js';

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * What a checkpoint vouches for, kept in its state.json: the SHA-256 of every file resume reads.
 * Resume (and every command that loads a run's weights) verifies all of it before it trusts
 * anything, so a flipped bit anywhere — a weight, the run's config, a counter of the state, the
 * record itself — is refused with the file's name and what to do, never trained on silently.
 */
export const checkpointIntegritySchema = z.strictObject({
  /** Every file of the checkpoint but state.json: path relative to the checkpoint → SHA-256. */
  files: z.record(z.string(), sha256Hex),
  /**
   * The run's own files beside the checkpoint (teamtr-run.json, config.json, summary.json) →
   * the SHA-256 each may have (null: absent). Two values only while one of them is replaced
   * (the old and the new), so a crash between the writes leaves a run that verifies.
   */
  runFiles: z.record(z.string(), z.array(sha256Hex.nullable()).min(1).max(2)),
  /** SHA-256 of metrics.jsonl's first `metricsBytes` bytes. */
  metricsSha256: sha256Hex,
  /**
   * The run's outputs (transcripts.jsonl, the TensorBoard event file) as the checkpoint saw
   * them: name → length and SHA-256 of that prefix. A resumed run cuts each back to its length
   * and appends from there. Absent in checkpoints written before outputs were recorded.
   */
  outputs: z
    .record(
      z.string(),
      z.strictObject({ bytes: z.number().int().nonnegative(), sha256: sha256Hex }),
    )
    .optional(),
  /** SHA-256 of state.json's text with this field empty (sealed-state.ts). */
  recordSha256: z.union([sha256Hex, z.literal('')]),
});
export type CheckpointIntegrity = z.output<typeof checkpointIntegritySchema>;

/** Hashes every file under `directory` except those `skip` accepts (relative paths). */
export async function hashDirectory(
  directory: string,
  skip: (relative: string) => boolean,
): Promise<Record<string, string>> {
  const hashes: Record<string, string> = {};
  for (const relative of listFiles(directory, skip))
    hashes[relative] = await hashFile(path.join(directory, relative), Infinity);
  return hashes;
}

/**
 * SHA-256 of a file's first `bytes` bytes (all of it for Infinity), read through the bounded
 * reader's opener: a FIFO or device in a run directory is refused at once, never read forever,
 * and no more than the size the open file reports is read.
 */
export async function hashFile(filePath: string, bytes: number): Promise<string> {
  const hash = createHash('sha256');
  const { handle, size } = await openRegularFile(filePath, 'a file of the run');
  try {
    const buffer = Buffer.allocUnsafe(1 << 20);
    for (let done = 0, wanted = Math.min(bytes, size); done < wanted;) {
      const { bytesRead } = await handle.read(
        buffer,
        0,
        Math.min(buffer.length, wanted - done),
        done,
      );
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      done += bytesRead;
    }
  } finally {
    await handle.close();
  }
  return hash.digest('hex');
}

/** SHA-256 of a text's UTF-8 bytes. */
export function hashText(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

const restore = 'restore it from a backup, or start a new run';

/**
 * Checks the checkpoint's files against its record: the same set of files (none missing, none
 * added: resume would read an added one) with the same bytes. `skip` names files outside the
 * record (state.json itself, leftovers of interrupted atomic writes, which nothing reads).
 */
export async function verifyCheckpointFiles(options: {
  checkpointDirectory: string;
  files: Readonly<Record<string, string>>;
  skip: (relative: string) => boolean;
}): Promise<void> {
  const { checkpointDirectory, files, skip } = options;
  for (const relative of listFiles(checkpointDirectory, skip))
    if (!(relative in files))
      throw new FileFormatError(
        path.join(checkpointDirectory, relative),
        `is not one of the ${Object.keys(files).length} files the checkpoint was saved with, and resume would read it; remove it, or restore the checkpoint from a backup`,
      );
  for (const [relative, expected] of Object.entries(files)) {
    const filePath = path.join(checkpointDirectory, relative);
    if (!existsSync(filePath))
      throw new FileFormatError(
        filePath,
        `missing from the checkpoint, so the run directory was damaged; ${restore}`,
      );
    if ((await hashFile(filePath, Infinity)) !== expected)
      throw new FileFormatError(
        filePath,
        `the file does not match the checksum the checkpoint recorded (SHA-256 ${expected.slice(0, 12)}…): the file was changed or damaged after it was saved; ${restore}`,
      );
  }
}

/** The error for a run file that does not match the record, by file (default: restore it). */
const runFileErrors: Readonly<Record<string, (filePath: string, problem: string) => TeamtrError>> =
  {
    'config.json': (filePath, problem) =>
      new RunDirectoryError(
        filePath,
        `${filePath}: ${problem}; a changed setting (a seed, a learning rate) would not continue the run the checkpoint holds`,
        'settingsThroughCommands',
      ),
    'summary.json': (filePath, problem) =>
      new FileFormatError(
        filePath,
        `${problem}; it is written again from the verified records when the run ends: delete it, then run the command again`,
      ),
  };

function restoreRunFile(filePath: string, problem: string): TeamtrError {
  return new FileFormatError(filePath, `${problem}; ${restore}`);
}

/**
 * Checks the run's own files (`runFiles` of the record) in `directory`; returns the SHA-256 of
 * each as found (null: absent), so a writer can record them again.
 */
export async function verifyRunFiles(
  directory: string,
  runFiles: CheckpointIntegrity['runFiles'],
  optional: (name: string) => boolean,
): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>();
  for (const [name, accepted] of Object.entries(runFiles)) {
    const filePath = path.join(directory, name);
    const actual = existsSync(filePath) ? await hashFile(filePath, Infinity) : null;
    if (!accepted.includes(actual) && !(actual === null && optional(name))) {
      const refuse = runFileErrors[name] ?? restoreRunFile;
      throw refuse(
        filePath,
        actual === null
          ? `missing, though the run's checkpoint recorded it`
          : `the file does not match the checksum the run's checkpoint recorded for it (checkpoint/state.json): it was changed or damaged after it was saved`,
      );
    }
    found.set(name, actual);
  }
  return found;
}

/** Checks the metrics.jsonl prefix a checkpoint corresponds to. */
export async function verifyMetricsPrefix(options: {
  metricsPath: string;
  metricsBytes: number;
  metricsSha256: string;
}): Promise<void> {
  const { metricsPath, metricsBytes, metricsSha256 } = options;
  const metricsLength = existsSync(metricsPath) ? statSync(metricsPath).size : 0;
  if (metricsLength < metricsBytes)
    throw new FileFormatError(
      metricsPath,
      `the file holds ${metricsLength} bytes but the checkpoint was taken at ${metricsBytes}: records of stages before the checkpoint are lost, so a resumed run's summary would not cover them; restore metrics.jsonl from a backup, or start a new run`,
    );
  if ((await hashFile(metricsPath, metricsBytes)) !== metricsSha256)
    throw new FileFormatError(
      metricsPath,
      `the first ${metricsBytes} bytes (the records up to the checkpoint) were edited or damaged since the checkpoint was saved; restore metrics.jsonl from a backup, or start a new run`,
    );
}

/** The length and prefix hash of each of `names` in `directory` (the record's `outputs`). */
export async function recordOutputs(
  directory: string,
  names: readonly string[],
): Promise<NonNullable<CheckpointIntegrity['outputs']>> {
  const outputs: NonNullable<CheckpointIntegrity['outputs']> = {};
  for (const name of names) {
    const file = path.join(directory, name);
    const bytes = statSync(file).size;
    outputs[name] = { bytes, sha256: await hashFile(file, bytes) };
  }
  return outputs;
}

/**
 * Each recorded output still begins with what the checkpoint saw. A deleted output is accepted
 * (the resumed run starts it afresh); a shorter or edited one is refused, naming it.
 */
export async function verifyOutputPrefixes(
  directory: string,
  outputs: CheckpointIntegrity['outputs'],
): Promise<void> {
  for (const [name, { bytes, sha256 }] of Object.entries(outputs ?? {})) {
    const file = path.join(directory, name);
    if (!existsSync(file)) continue;
    const remedy = `restore it from a backup, or delete it (the resumed run then starts it afresh, without the stages before the checkpoint)`;
    const length = statSync(file).size;
    if (length < bytes)
      throw new FileFormatError(
        file,
        `the file holds ${length} bytes but the checkpoint was taken at ${bytes}: it was cut short; ${remedy}`,
      );
    if ((await hashFile(file, bytes)) !== sha256)
      throw new FileFormatError(
        file,
        `its first ${bytes} bytes (what the run wrote up to the checkpoint) were edited or damaged since the checkpoint was saved; ${remedy}`,
      );
  }
}

/** Files under `directory` (relative paths with `/`, sorted) that `skip` does not accept. */
function listFiles(directory: string, skip: (relative: string) => boolean, prefix = ''): string[] {
  return readdirSync(path.join(directory, prefix), { withFileTypes: true })
    .flatMap((entry) => {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (skip(relative)) return [];
      return entry.isDirectory() ? listFiles(directory, skip, relative) : [relative];
    })
    .sort();
}
