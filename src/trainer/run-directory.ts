import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import {
  replaceDirectoryAtomic,
  recoverInterruptedReplace,
  writeJsonAtomic,
} from '../io/atomic.js';
import { readJsonFile } from '../io/json-file.js';
import { FileFormatError, TeamtrError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';
import type { MetricsRecord } from './records.js';
import { runStateSchema, type RunState } from './run-state.js';
import type { TrainableUnit } from './units.js';
import { restoreUnitCheckpoint, saveUnitCheckpoint } from './unit-checkpoint.js';

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
 */
export const runFiles = {
  marker: 'teamtr-run.json',
  config: 'config.json',
  metrics: 'metrics.jsonl',
  checkpoint: 'checkpoint',
  state: 'state.json',
  summary: 'summary.json',
} as const;

const markerSchema = z.strictObject({
  format: z.literal('teamtr-run'),
  version: z.literal(1),
  createdAt: z.string(),
});

export class RunDirectory {
  private constructor(readonly directory: string) {}

  get metricsPath(): string {
    return path.join(this.directory, runFiles.metrics);
  }

  /** A new run in an empty (or absent) directory. */
  static async create(directory: string, config: unknown): Promise<RunDirectory> {
    if (existsSync(directory)) {
      if (!statSync(directory).isDirectory())
        throw new TeamtrError(`${directory} exists and is not a directory`);
      if (readdirSync(directory).length > 0) {
        const hint = existsSync(path.join(directory, runFiles.marker))
          ? ' (continue it with --resume)'
          : '';
        throw new TeamtrError(
          `run directory ${directory} is not empty${hint}; choose another --run-dir`,
        );
      }
    }
    mkdirSync(directory, { recursive: true });
    const run = new RunDirectory(directory);
    await writeJsonAtomic(path.join(directory, runFiles.config), config);
    await writeJsonAtomic(path.join(directory, runFiles.marker), {
      format: 'teamtr-run',
      version: 1,
      createdAt: new Date().toISOString(),
    });
    appendFileSync(run.metricsPath, '');
    return run;
  }

  /** An existing run; refuses directories that are not teamtr runs or are damaged. */
  static async open(directory: string): Promise<RunDirectory> {
    const markerPath = path.join(directory, runFiles.marker);
    if (!existsSync(directory)) throw new TeamtrError(`run directory ${directory} does not exist`);
    if (!existsSync(markerPath)) {
      throw new FileFormatError(
        directory,
        `not a teamtr run directory (no ${runFiles.marker}); point --run-dir at a directory \`teamtr train\` created`,
      );
    }
    parseWithSchema(markerSchema, await readJsonFile(markerPath), markerPath);
    if (!existsSync(path.join(directory, runFiles.config)))
      throw new FileFormatError(
        directory,
        `${runFiles.config} is missing: the run directory is damaged`,
      );
    return new RunDirectory(directory);
  }

  async readConfig(): Promise<unknown> {
    return readJsonFile(path.join(this.directory, runFiles.config));
  }

  appendMetrics(records: readonly MetricsRecord[]): void {
    if (records.length === 0) return;
    appendFileSync(
      this.metricsPath,
      records.map((record) => JSON.stringify(record)).join('\n') + '\n',
    );
  }

  metricsBytes(): number {
    return statSync(this.metricsPath).size;
  }

  readMetrics(): MetricsRecord[] {
    if (!existsSync(this.metricsPath)) return [];
    return readFileSync(this.metricsPath, 'utf8')
      .split('\n')
      .filter((line) => line.trim())
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as MetricsRecord];
        } catch {
          return []; // a half-written last line from an interrupted run
        }
      });
  }

  hasCheckpoint(): boolean {
    return existsSync(path.join(this.directory, runFiles.checkpoint, runFiles.state));
  }

  /**
   * Saves every unit and the run state as one atomic directory replacement. A LoRA unit saves
   * its adapters (PEFT layout) and a reference to its base model, not the base weights, unless
   * `baseWeights` (unit-checkpoint.ts).
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
          await saveUnitCheckpoint(path.join(temporary, 'units', unit.name), unit, {
            tokenizer: tokenizers.get(unit.name),
            baseWeights: options.baseWeights ?? false,
          });
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
    for (const unit of units)
      await restoreUnitCheckpoint(path.join(checkpointDirectory, 'units', unit.name), unit);
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
