import { appendFileSync, existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFileAtomic } from '../../io/atomic.js';
import { readBoundedFileSync } from '../../util/bounded-file.js';
import { isAtomicWriteLeftover, runFiles } from '../run/run-directory.js';
import {
  decodeEvent,
  encodeEvent,
  eventFileVersion,
  type SummaryEntry,
  type TensorboardEvent,
} from './tensorboard-events.js';
import { decodeRecords, encodeRecord } from './tfrecord.js';

/**
 * A run's metrics as a TensorBoard event file in the run directory, so `tensorboard --logdir
 * runs` lists every run by its directory. Every value is logged at its record's stage (the
 * step): `<type>/<field>` for each number (and 0/1 for each flag) of a metrics record, with
 * `/<agent>` after an agent's own, e.g. `eval/accuracy`, `stage/rewardAfter`, `update/kl/solver`.
 */
export class TensorboardFile {
  private constructor(readonly file: string) {}

  /**
   * The run's event file, created (with its version event) or reopened; on reopening, events
   * after stage `keepThrough` are dropped (a resumed run writes them again), atomically.
   */
  static async open(runDirectory: string, keepThrough: number): Promise<TensorboardFile> {
    const existing = readdirSync(runDirectory)
      .filter((name) => name.startsWith(runFiles.tensorboardEvents) && !isAtomicWriteLeftover(name))
      .sort()[0];
    const file = path.join(runDirectory, existing ?? eventFileName());
    const kept = existing ? keptEvents(file, keepThrough) : [];
    const header = { wallTime: Date.now() / 1000, step: 0, fileVersion: eventFileVersion };
    await writeFileAtomic(
      file,
      kept.length > 0 ? kept.map(encodeRecord) : [encodeRecord(encodeEvent(header))],
    );
    return new TensorboardFile(file);
  }

  /** Appends events (one write). */
  append(events: readonly TensorboardEvent[]): void {
    if (events.length === 0) return;
    appendFileSync(
      this.file,
      Buffer.concat(events.map((event) => encodeRecord(encodeEvent(event)))),
    );
  }
}

/** TensorBoard's own naming: events.out.tfevents.<seconds>.<host>. */
function eventFileName(): string {
  return `${runFiles.tensorboardEvents}${Math.floor(Date.now() / 1000)}.${os.hostname()}`;
}

/** The encoded events of `file` up to step `keepThrough`; none if it cannot be read. */
function keptEvents(file: string, keepThrough: number): Uint8Array[] {
  if (!existsSync(file)) return [];
  try {
    return decodeRecords(
      readBoundedFileSync(file, { limit: 'metricsBytes', what: 'a TensorBoard event file' }),
    ).filter((record) => {
      const event = decodeEvent(record);
      return event.fileVersion !== undefined || event.step <= keepThrough;
    });
  } catch {
    return [];
  }
}

/** The scalars of one metrics record at its stage, or null for a record without a stage. */
export function scalarsOf(
  record: Record<string, unknown>,
): { step: number; values: SummaryEntry[] } | null {
  const { type, stage, agent } = record;
  if (typeof type !== 'string' || typeof stage !== 'number') return null;
  const suffix = typeof agent === 'string' ? `/${agent}` : '';
  const values: SummaryEntry[] = [];
  for (const [field, value] of Object.entries(record)) {
    if (field === 'stage') continue;
    const scalar = typeof value === 'boolean' ? Number(value) : value;
    if (typeof scalar === 'number' && Number.isFinite(scalar))
      values.push({ tag: `${type}/${field}${suffix}`, scalar });
  }
  return values.length > 0 ? { step: stage, values } : null;
}
