import { appendFileSync, existsSync, statSync, truncateSync } from 'node:fs';
import path from 'node:path';
import {
  replaceDirectoryAtomic,
  recoverInterruptedReplace,
  writeFileAtomic,
} from '../../io/atomic.js';
import { readJsonFile } from '../../io/json-file.js';
import { readBoundedText, readBoundedTextSync } from '../../util/bounded-file.js';
import { teamtrVersion } from '../../util/package-root.js';
import { FileFormatError } from '../../util/errors.js';
import {
  hashDirectory,
  hashFile,
  hashText,
  recordOutputs,
  verifyCheckpointFiles,
  verifyMetricsPrefix,
  verifyOutputPrefixes,
  verifyRunFiles,
  type CheckpointIntegrity,
} from './checkpoint-integrity.js';
import { clearUnstartedRun, makeRunDirectory } from './new-run.js';
import {
  checkRunDirectory,
  isAtomicWriteLeftover,
  jsonText,
  movedAsideCheckpoint,
  runFiles,
  runOutputNames,
  type MetricsLine,
} from './run-files.js';
import { RunDirectoryError } from './run-directory-error.js';
import { holdRun, type HeldLock } from './run-lock.js';
import type { RunState } from './run-state.js';
import { readSealedState, sealedStateText, type SealedRunState } from './sealed-state.js';
import type { TrainableUnit } from '../update/units.js';
import { unitEngine } from '../update/engines.js';

export { isAtomicWriteLeftover, isRunEntry, runFiles, type MetricsLine } from './run-files.js';

/** The run's files beside the checkpoint that its integrity record covers. */
const recordedRunFiles = [runFiles.marker, runFiles.config, runFiles.summary] as const;

/** A checkpoint whose every file matched its record. */
interface VerifiedCheckpoint {
  /** The directory read (checkpoint/, or the copy an interrupted replacement moved aside). */
  directory: string;
  state: SealedRunState;
  /** SHA-256 of each of `recordedRunFiles` as found (null: absent). */
  runFileHashes: Map<string, string | null>;
}

/**
 * A run directory as anyone may read it (the report, the dashboard, `eval`, `serve`). Reading
 * changes nothing in it. Writing into a run that a trainer may hold goes through HeldRun, which
 * holds its lock.
 */
export class RunDirectory {
  /** undefined until verified; null: the run has no checkpoint yet. */
  protected verified: VerifiedCheckpoint | null | undefined;

  protected constructor(readonly directory: string) {}

  get metricsPath(): string {
    return path.join(this.directory, runFiles.metrics);
  }

  /**
   * A new run, created as HeldRun.create does and not held afterwards: for tools and fixtures
   * that write a run no trainer works on.
   */
  static async create(directory: string, config: unknown): Promise<HeldRun> {
    const run = await HeldRun.create(directory, config);
    run.release();
    return run;
  }

  /** An existing run; refuses directories that are not teamtr runs or are damaged. */
  static async open(directory: string): Promise<RunDirectory> {
    await checkRunDirectory(directory);
    return new RunDirectory(directory);
  }

  /** The run's config.json, once the checkpoint (which vouches for it) is verified. */
  async readConfig(): Promise<unknown> {
    await this.verifiedCheckpoint();
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
    const lines = readBoundedTextSync(this.metricsPath, {
      limit: 'metricsBytes',
      what: "a run's metrics.jsonl",
    }).split('\n');
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

  /** Whether the run saved a checkpoint (complete or not: a damaged one is refused, not ignored). */
  hasCheckpoint(): boolean {
    return (
      existsSync(path.join(this.directory, runFiles.checkpoint)) ||
      movedAsideCheckpoint(this.directory) !== null
    );
  }

  /** The saved run state, verified with the whole checkpoint, or null before the first checkpoint. */
  async readCheckpointState(): Promise<RunState | null> {
    const verified = await this.verifiedCheckpoint();
    return verified ? structuredClone(verified.state) : null;
  }

  /**
   * Restores every unit's weights and optimizer from the verified checkpoint; returns the
   * saved state.
   */
  async restoreCheckpoint(
    units: readonly TrainableUnit[],
    options: { truncateMetrics?: boolean } = {},
  ): Promise<RunState> {
    const verified = await this.verifiedCheckpoint();
    if (!verified)
      throw new RunDirectoryError(
        this.directory,
        `${this.directory} has no checkpoint to resume from yet`,
        'startWithoutResume',
      );
    for (const unit of units)
      await unitEngine(unit).load(path.join(verified.directory, 'units', unit.name));
    // Records written after the checkpoint are produced again, identically, by the resumed run.
    if (options.truncateMetrics ?? true) {
      this.truncateMetrics(verified.state.metricsBytes);
      this.truncateOutputs(verified.state.integrity.outputs);
    }
    return structuredClone(verified.state);
  }

  /** Cuts each recorded output back to what the checkpoint saw (the resumed run appends again). */
  private truncateOutputs(outputs: CheckpointIntegrity['outputs']): void {
    for (const [name, { bytes }] of Object.entries(outputs ?? {})) {
      const file = path.join(this.directory, name);
      if (existsSync(file) && statSync(file).size > bytes) truncateSync(file, bytes);
    }
  }

  /** Drops metrics.jsonl past `bytes` (records a resumed run will write again). */
  truncateMetrics(bytes: number): void {
    if (existsSync(this.metricsPath) && statSync(this.metricsPath).size > bytes)
      truncateSync(this.metricsPath, bytes);
  }

  /**
   * The checkpoint directory to read, or null before the first checkpoint. A reader changes
   * nothing (the run may be on a read-only disk, or a trainer's): the copy an interrupted
   * replacement moved aside is read where it lies. HeldRun repairs instead.
   */
  protected async checkpointToRead(): Promise<string | null> {
    const checkpoint = path.join(this.directory, runFiles.checkpoint);
    return existsSync(checkpoint) ? checkpoint : movedAsideCheckpoint(this.directory);
  }

  /** The checkpoint, verified whole once: state and record, run files, checkpoint files, metrics. */
  protected async verifiedCheckpoint(): Promise<VerifiedCheckpoint | null> {
    if (this.verified === undefined) this.verified = await this.verify();
    return this.verified;
  }

  private async verify(): Promise<VerifiedCheckpoint | null> {
    const directory = await this.checkpointToRead();
    if (!directory) {
      if (existsSync(path.join(this.directory, runFiles.summary)))
        throw new FileFormatError(
          path.join(this.directory, runFiles.checkpoint),
          `missing, though ${runFiles.summary} says the run ended after saving one: the run directory was damaged; restore checkpoint/ from a backup, or start a new run in another directory`,
        );
      return null;
    }
    const statePath = path.join(directory, runFiles.state);
    if (!existsSync(statePath))
      throw new FileFormatError(
        statePath,
        `missing, so the checkpoint beside it can be neither verified nor resumed (the run is not started over on top of it); restore ${runFiles.state} from a backup, or start a new run in another directory`,
      );
    const text = await readBoundedText(statePath, { limit: 'jsonBytes', what: 'a run state' });
    const state = readSealedState(text, statePath);
    const runFileHashes = await verifyRunFiles(
      this.directory,
      state.integrity.runFiles,
      (name) => name === runFiles.summary,
    );
    await verifyCheckpointFiles({
      checkpointDirectory: directory,
      files: state.integrity.files,
      skip: (relative) =>
        relative === runFiles.state || isAtomicWriteLeftover(path.basename(relative)),
    });
    await verifyMetricsPrefix({
      metricsPath: this.metricsPath,
      metricsBytes: state.metricsBytes,
      metricsSha256: state.integrity.metricsSha256,
    });
    await verifyOutputPrefixes(this.directory, state.integrity.outputs);
    return { directory, state, runFileHashes };
  }
}

/**
 * A run directory this process holds (running.json, run-lock.ts): how a trainer, or anything
 * that rewrites an existing run's files, gets one. The lock is taken before anything in the
 * directory is changed, and `release` gives it up. Every file it writes that resume reads is
 * recorded in the checkpoint's integrity record.
 */
export class HeldRun extends RunDirectory {
  /** SHA-256 of each of `recordedRunFiles` as this holder wrote or verified it (null: absent). */
  private runFileHashes: Map<string, string | null> | null = null;

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
    makeRunDirectory(directory);
    return HeldRun.holding(directory, async (run) => {
      await clearUnstartedRun(directory);
      const marker = jsonText({
        format: 'teamtr-run',
        version: 1,
        createdAt: new Date().toISOString(),
        teamtrVersion: teamtrVersion(),
      });
      const configText = jsonText(config);
      await writeFileAtomic(path.join(directory, runFiles.marker), marker);
      await writeFileAtomic(path.join(directory, runFiles.config), configText);
      appendFileSync(run.metricsPath, '');
      run.verified = null;
      run.runFileHashes = new Map([
        [runFiles.marker, hashText(marker)],
        [runFiles.config, hashText(configText)],
        [runFiles.summary, null],
      ]);
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

  /**
   * Saves every unit and the run state as one atomic directory replacement, with the state's
   * integrity record: the SHA-256 of every file saved, of the run's own files and of the
   * metrics.jsonl prefix, sealed (sealed-state.ts). A LoRA unit saves its adapters (PEFT
   * layout) and a reference to its base model, not the base weights, unless `baseWeights`
   * (update/local/unit-checkpoint.ts).
   */
  async saveCheckpoint(
    state: RunState,
    units: readonly TrainableUnit[],
    tokenizers: ReadonlyMap<string, unknown>,
    options: { baseWeights?: boolean } = {},
  ): Promise<void> {
    const directory = path.join(this.directory, runFiles.checkpoint);
    const runFileHashes = await this.currentRunFileHashes();
    let sealed: SealedRunState | null = null;
    await replaceDirectoryAtomic(directory, async (temporary) => {
      for (const unit of units)
        await unitEngine(unit).save(path.join(temporary, 'units', unit.name), {
          tokenizer: tokenizers.get(unit.name),
          baseWeights: options.baseWeights ?? false,
        });
      sealed = {
        ...structuredClone(state),
        integrity: {
          files: await hashDirectory(temporary, (relative) => relative === runFiles.state),
          runFiles: Object.fromEntries([...runFileHashes].map(([name, hash]) => [name, [hash]])),
          metricsSha256: await hashFile(this.metricsPath, state.metricsBytes),
          outputs: await recordOutputs(this.directory, runOutputNames(this.directory)),
          recordSha256: '',
        },
      };
      await writeFileAtomic(path.join(temporary, runFiles.state), sealedStateText(sealed));
    });
    this.verified = { directory, state: sealed!, runFileHashes };
  }

  /** Replaces config.json (a swap scheduled on an existing run, moved endpoints), recorded. */
  async writeConfig(config: unknown): Promise<void> {
    await this.replaceRecordedFile(runFiles.config, jsonText(config));
  }

  /** Writes summary.json (at the end of a run, and on interruption), recorded. */
  async writeSummary(summary: unknown): Promise<void> {
    await this.replaceRecordedFile(runFiles.summary, jsonText(summary));
  }

  /** The hashes to record for the run's files: as written or verified, else as found. */
  private async currentRunFileHashes(): Promise<Map<string, string | null>> {
    this.runFileHashes ??= (await this.verifiedCheckpoint())?.runFileHashes ?? null;
    if (!this.runFileHashes) {
      // A resumed run that stopped before its first checkpoint: nothing vouched for these yet.
      this.runFileHashes = new Map();
      for (const name of recordedRunFiles) {
        const filePath = path.join(this.directory, name);
        this.runFileHashes.set(
          name,
          existsSync(filePath) ? await hashFile(filePath, Infinity) : null,
        );
      }
    }
    return this.runFileHashes;
  }

  /**
   * Replaces one of the run's recorded files. With a checkpoint, the record first accepts both
   * the old and the new file, then the file is replaced, then the record names the new one
   * alone: a crash between any two steps leaves a run that verifies, as it was or as edited.
   */
  private async replaceRecordedFile(name: string, text: string): Promise<void> {
    const hashes = await this.currentRunFileHashes();
    const verified = await this.verifiedCheckpoint();
    const after = hashText(text);
    if (verified) await this.reseal(verified, name, [hashes.get(name) ?? null, after]);
    await writeFileAtomic(path.join(this.directory, name), text);
    hashes.set(name, after);
    if (verified) await this.reseal(verified, name, [after]);
  }

  private async reseal(
    verified: VerifiedCheckpoint,
    name: string,
    accepted: Array<string | null>,
  ): Promise<void> {
    const { integrity } = verified.state;
    const state = {
      ...verified.state,
      integrity: { ...integrity, runFiles: { ...integrity.runFiles, [name]: accepted } },
    };
    await writeFileAtomic(path.join(verified.directory, runFiles.state), sealedStateText(state));
    verified.state = state;
  }

  /**
   * The checkpoint to read, after repairing what an interrupted replacement of it (or of its
   * state.json) left behind.
   */
  protected override async checkpointToRead(): Promise<string | null> {
    const checkpoint = path.join(this.directory, runFiles.checkpoint);
    await recoverInterruptedReplace(checkpoint);
    if (!existsSync(checkpoint)) return null;
    await recoverInterruptedReplace(path.join(checkpoint, runFiles.state));
    return checkpoint;
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
