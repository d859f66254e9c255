import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import {
  replaceDirectoryAtomic,
  recoverInterruptedReplace,
  writeJsonAtomic,
} from '../../io/atomic.js';
import { readJsonFile } from '../../io/json-file.js';
import { FileFormatError, TeamtrError } from '../../util/errors.js';
import { parseWithSchema } from '../../util/schema.js';
import { hashDirectory, hashFile, verifyCheckpoint } from './checkpoint-integrity.js';
import { holdRun, runLockFile, type HeldLock } from './run-lock.js';
import { runStateSchema, type RunState } from './run-state.js';
import type { TrainableUnit } from '../update/units.js';
import { unitEngine } from '../update/engines.js';

/**
 * A run directory:
 *
 *     teamtr-run.json        marker: format and version (a foreign directory is refused)
 *     config.json            the resolved training config
 *     metrics.jsonl          one record per update, stage, evaluation and swap
 *     checkpoint/            the latest resumable state, replaced atomically as a whole
 *       state.json           counters and the metrics.jsonl length it matches
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
});

/** Leftovers of io/atomic.ts writes (`.<name>.tmp-<pid>-<hex>`, `.<name>.old-…`). */
const atomicLeftover = /^\.(.+)\.(tmp|old)-\d+-[0-9a-f]+$/;

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

/** One line of metrics.jsonl: a record, discriminated by `type` (trainer/records.ts). */
export interface MetricsLine {
  type: string;
}

/**
 * A run directory as anyone may read it (the report, the dashboard, `eval`, `serve`). Writing
 * into a run that a trainer may hold goes through HeldRun (held-run.ts), which holds its lock.
 */
export class RunDirectory {
  protected constructor(readonly directory: string) {}

  get metricsPath(): string {
    return path.join(this.directory, runFiles.metrics);
  }

  /**
   * A new run, created as HeldRun.create does and not held afterwards: for tools and fixtures
   * that write a run no trainer works on.
   */
  static async create(directory: string, config: unknown): Promise<RunDirectory> {
    const run = await HeldRun.create(directory, config);
    run.release();
    return run;
  }

  /** An existing run; refuses directories that are not teamtr runs or are damaged. */
  static async open(directory: string): Promise<RunDirectory> {
    const markerPath = path.join(directory, runFiles.marker);
    if (!existsSync(directory)) throw new TeamtrError(`run directory ${directory} does not exist`);
    const stoppedWhileCreated = `the run was stopped while its directory was being created, before its config was saved: nothing can be resumed; start it again without --resume (a plain run reuses ${directory})`;
    if (!existsSync(markerPath)) {
      if (readdirSync(directory).every(isAtomicWriteLeftover))
        throw new FileFormatError(directory, stoppedWhileCreated);
      throw new FileFormatError(
        directory,
        `not a teamtr run directory (no ${runFiles.marker}); point --run-dir at a directory \`teamtr train\` created`,
      );
    }
    parseWithSchema(markerSchema, await readJsonFile(markerPath), markerPath);
    if (!existsSync(path.join(directory, runFiles.config))) {
      if (readdirSync(directory).every(isRunEntry))
        throw new FileFormatError(directory, stoppedWhileCreated);
      throw new FileFormatError(
        directory,
        `${runFiles.config} is missing: the run directory is damaged; restore config.json from a backup, or start a new run elsewhere`,
      );
    }
    return new RunDirectory(directory);
  }

  async readConfig(): Promise<unknown> {
    return readJsonFile(path.join(this.directory, runFiles.config));
  }

  appendMetrics(records: readonly MetricsLine[]): void {
    if (records.length === 0) return;
    appendFileSync(
      this.metricsPath,
      records.map((record) => JSON.stringify(record)).join('\n') + '\n',
    );
  }

  metricsBytes(): number {
    return statSync(this.metricsPath).size;
  }

  /** The complete records of metrics.jsonl (trainer/records.ts: MetricsRecord, for a trainer's run). */
  readMetrics<Line extends MetricsLine = MetricsLine>(): Line[] {
    if (!existsSync(this.metricsPath)) return [];
    const lines = readFileSync(this.metricsPath, 'utf8').split('\n');
    const complete = lines.slice(0, -1); // the text after the last newline is still being written
    return complete.flatMap((line, index) => {
      if (!line.trim()) return [];
      try {
        return [JSON.parse(line) as Line];
      } catch {
        throw new FileFormatError(
          this.metricsPath,
          `line ${index + 1} is not a JSON record: the file was edited or damaged; restore it from a backup (the checkpoint's checksum tells a good copy), or start a new run`,
        );
      }
    });
  }

  hasCheckpoint(): boolean {
    return existsSync(path.join(this.directory, runFiles.checkpoint, runFiles.state));
  }

  /**
   * Saves every unit and the run state as one atomic directory replacement. A LoRA unit saves
   * its adapters (PEFT layout) and a reference to its base model, not the base weights, unless
   * `baseWeights` (update/local/unit-checkpoint.ts).
   */
  async saveCheckpoint(
    state: RunState,
    units: readonly TrainableUnit[],
    tokenizers: ReadonlyMap<string, unknown>,
    options: { baseWeights?: boolean } = {},
  ): Promise<void> {
    await replaceDirectoryAtomic(
      path.join(this.directory, runFiles.checkpoint),
      async (temporary) => {
        for (const unit of units)
          await unitEngine(unit).save(path.join(temporary, 'units', unit.name), {
            tokenizer: tokenizers.get(unit.name),
            baseWeights: options.baseWeights ?? false,
          });
        state.integrity = {
          files: await hashDirectory(temporary, [runFiles.state]),
          metricsSha256: await hashFile(this.metricsPath, state.metricsBytes),
        };
        await writeJsonAtomic(path.join(temporary, runFiles.state), state);
      },
    );
  }

  /** Replaces config.json atomically (a swap scheduled on an existing run rewrites it). */
  async writeConfig(config: unknown): Promise<void> {
    await writeJsonAtomic(path.join(this.directory, runFiles.config), config);
  }

  /** The saved run state without loading any weights, or null before the first checkpoint. */
  async readCheckpointState(): Promise<RunState | null> {
    const checkpointDirectory = path.join(this.directory, runFiles.checkpoint);
    await recoverInterruptedReplace(checkpointDirectory);
    const statePath = path.join(checkpointDirectory, runFiles.state);
    if (!existsSync(statePath)) return null;
    return parseWithSchema(runStateSchema, await readJsonFile(statePath), statePath);
  }

  /** Restores every unit's weights and optimizer; returns the saved state. */
  async restoreCheckpoint(
    units: readonly TrainableUnit[],
    options: { truncateMetrics?: boolean } = {},
  ): Promise<RunState> {
    const checkpointDirectory = path.join(this.directory, runFiles.checkpoint);
    await recoverInterruptedReplace(checkpointDirectory);
    const statePath = path.join(checkpointDirectory, runFiles.state);
    if (!existsSync(statePath))
      throw new TeamtrError(
        `${this.directory} has no checkpoint to resume from yet; start it again without --resume`,
      );
    const state = parseWithSchema(runStateSchema, await readJsonFile(statePath), statePath);
    if (state.integrity)
      await verifyCheckpoint({
        checkpointDirectory,
        integrity: state.integrity,
        metricsPath: this.metricsPath,
        metricsBytes: state.metricsBytes,
      });
    for (const unit of units)
      await unitEngine(unit).load(path.join(checkpointDirectory, 'units', unit.name));
    // Records written after the checkpoint are produced again, identically, by the resumed run.
    if (options.truncateMetrics ?? true) this.truncateMetrics(state.metricsBytes);
    return state;
  }

  /** Drops metrics.jsonl past `bytes` (records a resumed run will write again). */
  truncateMetrics(bytes: number): void {
    if (existsSync(this.metricsPath) && statSync(this.metricsPath).size > bytes)
      truncateSync(this.metricsPath, bytes);
  }

  async writeSummary(summary: unknown): Promise<void> {
    await writeJsonAtomic(path.join(this.directory, runFiles.summary), summary);
  }
}

/**
 * A run directory this process holds (running.json, run-lock.ts): how a trainer, or anything
 * that rewrites an existing run's files, gets one. The lock is taken before anything in the
 * directory is changed, and `release` gives it up.
 */
export class HeldRun extends RunDirectory {
  private constructor(
    directory: string,
    private readonly lock: HeldLock,
  ) {
    super(directory);
  }

  /**
   * A new run in an empty (or absent) directory, or in one left by a run that stopped before
   * its first checkpoint (nothing there can be resumed, so it starts over). The marker is
   * written first: a run killed at any moment leaves a directory this recognizes.
   */
  static override async create(directory: string, config: unknown): Promise<HeldRun> {
    if (existsSync(directory)) {
      if (!statSync(directory).isDirectory())
        throw new TeamtrError(
          `${directory} exists and is not a directory; choose another --run-dir`,
        );
      if (!readdirSync(directory).every((name) => isRunEntry(name) || name === runFiles.checkpoint))
        throw notEmpty(directory);
    }
    mkdirSync(directory, { recursive: true });
    return HeldRun.holding(directory, async (run) => {
      await clearUnstartedRun(directory);
      await writeJsonAtomic(path.join(directory, runFiles.marker), {
        format: 'teamtr-run',
        version: 1,
        createdAt: new Date().toISOString(),
      });
      await writeJsonAtomic(path.join(directory, runFiles.config), config);
      appendFileSync(run.metricsPath, '');
    });
  }

  /** An existing run (RunDirectory.open's checks), held: to resume it, or to edit its config. */
  static override async open(directory: string): Promise<HeldRun> {
    await RunDirectory.open(directory);
    return HeldRun.holding(directory, async () => undefined);
  }

  /** Says the trainer is alive (after every stage). */
  beat(): Promise<void> {
    return this.lock.beat();
  }

  release(): void {
    this.lock.release();
  }

  /** Holds `directory`, then runs `prepare` on it; gives the lock back if that fails. */
  private static async holding(
    directory: string,
    prepare: (run: HeldRun) => Promise<void>,
  ): Promise<HeldRun> {
    const run = new HeldRun(directory, await holdRun(directory));
    try {
      await prepare(run);
      return run;
    } catch (error) {
      run.release();
      throw error;
    }
  }
}

function notEmpty(directory: string): TeamtrError {
  return new TeamtrError(`run directory ${directory} is not empty; choose another --run-dir`);
}

/**
 * Empties a directory that holds a run which never reached its first checkpoint, but for the
 * lock this trainer holds; refuses any other non-empty directory (a run with a checkpoint is
 * continued with --resume).
 */
async function clearUnstartedRun(directory: string): Promise<void> {
  const entries = readdirSync(directory).filter((name) => !isLockEntry(name));
  if (entries.length === 0) return;
  await recoverInterruptedReplace(path.join(directory, runFiles.checkpoint));
  if (existsSync(path.join(directory, runFiles.checkpoint, runFiles.state)))
    throw new TeamtrError(
      `run directory ${directory} holds a run with a checkpoint; continue it with --resume, or choose another --run-dir`,
    );
  const ours =
    entries.every(isRunEntry) &&
    (entries.includes(runFiles.marker) || entries.every(isAtomicWriteLeftover));
  if (!ours) throw notEmpty(directory);
  for (const entry of readdirSync(directory).filter((name) => !isLockEntry(name)))
    rmSync(path.join(directory, entry), { recursive: true, force: true });
}

/** running.json, or a temporary file of it (run-lock.ts). */
function isLockEntry(name: string): boolean {
  return (atomicLeftover.exec(name)?.[1] ?? name) === runLockFile;
}
