import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { readJsonFile } from '../../io/json-file.js';
import { FileFormatError } from '../../util/errors.js';
import { parseWithSchema } from '../../util/schema.js';
import { RunDirectoryError } from './run-directory-error.js';
import { runLockFile } from './run-lock.js';

/**
 * A run directory:
 *
 *     teamtr-run.json        marker: format, version and the teamtr version that created it
 *                            (a foreign directory is refused)
 *     config.json            the resolved training config
 *     metrics.jsonl          one record per update, stage, evaluation and swap
 *     checkpoint/            the latest resumable state, replaced atomically as a whole
 *       state.json           counters, the metrics.jsonl length it matches, and the integrity
 *                            record: the SHA-256 of every file resume reads, sealed
 *       units/<name>/        weights (a LoRA unit: adapter/ in PEFT layout and a reference
 *                            to its base model), optimizer state and tokenizer of each model
 *     summary.json           written at the end (and on interruption)
 *     transcripts.jsonl      a few episodes of every stage, as the agents wrote them
 *     events.out.tfevents.*  the metrics as a TensorBoard event file (tracking.tensorboard)
 *     running.json           while a trainer works on the run (run-lock.ts)
 */
export const runFiles = {
  marker: 'teamtr-run.json',
  config: 'config.json',
  metrics: 'metrics.jsonl',
  checkpoint: 'checkpoint',
  state: 'state.json',
  summary: 'summary.json',
  transcripts: 'transcripts.jsonl',
  /** The start of a TensorBoard event file's name (TensorBoard finds them by it). */
  tensorboardEvents: 'events.out.tfevents.',
} as const;

const markerSchema = z.strictObject({
  format: z.literal('teamtr-run'),
  version: z.literal(1),
  createdAt: z.string(),
  /** The teamtr that created the run (absent in runs created before it was recorded). */
  teamtrVersion: z.string().optional(),
});

/** Leftovers of io/atomic.ts writes (`.<name>.tmp-<pid>-<hex>`, `.<name>.old-…`). */
const atomicLeftover = /^\.(.+)\.(tmp|old)-\d+-[0-9a-f]+$/;

/** The name whose atomic write left `name` behind, or null if `name` is no such leftover. */
export function leftoverOf(name: string): string | null {
  return atomicLeftover.exec(name)?.[1] ?? null;
}

export function isAtomicWriteLeftover(name: string): boolean {
  return atomicLeftover.test(name);
}

/** A file a run writes before its first checkpoint, or a temp copy of one (or of a checkpoint). */
export function isRunEntry(name: string): boolean {
  const base = atomicLeftover.exec(name)?.[1] ?? name;
  const ownFiles: string[] = [
    runFiles.marker,
    runFiles.config,
    runFiles.metrics,
    runFiles.summary,
    runFiles.transcripts,
    runLockFile,
  ];
  return (
    ownFiles.includes(base) ||
    base.startsWith(runFiles.tensorboardEvents) ||
    (base === runFiles.checkpoint && name !== base)
  );
}

/** The run's outputs in `directory`: transcripts and TensorBoard event files (trainer/outputs). */
export function runOutputNames(directory: string): string[] {
  return readdirSync(directory)
    .filter(
      (name) =>
        !isAtomicWriteLeftover(name) &&
        (name === runFiles.transcripts || name.startsWith(runFiles.tensorboardEvents)),
    )
    .sort();
}

/** One line of metrics.jsonl: a record, discriminated by `type` (trainer/records.ts). */
export interface MetricsLine {
  type: string;
}

/** JSON as every run file is written: indented, with a trailing newline. */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * The copy of checkpoint/ that a replacement interrupted between its two renames left aside
 * (`.checkpoint.old-<pid>-<hex>`), or null.
 */
export function movedAsideCheckpoint(directory: string): string | null {
  const aside = readdirSync(directory)
    .filter((name) => leftoverOf(name) === runFiles.checkpoint)
    .filter((name) => name.startsWith(`.${runFiles.checkpoint}.old-`))
    .sort()[0];
  return aside === undefined ? null : path.join(directory, aside);
}

/** RunDirectory.open's checks: a directory, marked as a teamtr run, with its config. */
export async function checkRunDirectory(directory: string): Promise<void> {
  const markerPath = path.join(directory, runFiles.marker);
  if (!existsSync(directory))
    throw new RunDirectoryError(
      directory,
      `run directory ${directory} does not exist`,
      'givenRunDirectory',
    );
  if (!statSync(directory).isDirectory())
    throw new RunDirectoryError(
      directory,
      `${directory} is a file, not a run directory`,
      'givenRunDirectory',
    );
  const stoppedWhileCreated = () =>
    new RunDirectoryError(
      directory,
      `${directory}: the run was stopped while its directory was being created, before its config was saved: nothing can be resumed`,
      'startWithoutResume',
    );
  if (!existsSync(markerPath)) {
    if (readdirSync(directory).every(isAtomicWriteLeftover)) throw stoppedWhileCreated();
    throw new RunDirectoryError(
      directory,
      `${directory}: not a teamtr run directory (no ${runFiles.marker})`,
      'givenRunDirectory',
    );
  }
  parseWithSchema(markerSchema, await readJsonFile(markerPath), markerPath);
  if (!existsSync(path.join(directory, runFiles.config))) {
    if (readdirSync(directory).every(isRunEntry)) throw stoppedWhileCreated();
    throw new FileFormatError(
      directory,
      `${runFiles.config} is missing: the run directory is damaged; restore config.json from a backup, or start a new run elsewhere`,
    );
  }
}
