import { realpath } from 'node:fs/promises';
import { readJsonFile } from '../io/json-file.js';
import { readMetricsSince, type MetricsChunk } from '../report/metrics-file.js';
import { asObject, runLabels, type RunView } from '../report/runs.js';
import type { TrainSummary } from '../trainer/summary.js';
import { isRunActive } from '../trainer/run/run-lock.js';
import { runFiles } from '../trainer/run/run-directory.js';
import { TeamtrError } from '../util/errors.js';
import { resolveFileInside, type ResolvedFile } from './safe-path.js';

/**
 * The runs a dashboard serves, read incrementally: each refresh reads only the metrics bytes
 * appended since the last one (complete lines only), so a run being written is followed live
 * and a half-written last line is simply read next time. Every file goes through the same
 * containment check as a client request.
 */

/** A file of a run that is a link out of it (or not a regular file): never read. */
export class RefusedFileError extends TeamtrError {}

interface LiveRun {
  view: RunView;
  /** Real path of the run directory: the root every served file must stay inside. */
  root: string;
  metricsOffset: number;
}

export class RunStore {
  private refreshing: Promise<void> | null = null;

  private constructor(private readonly live: LiveRun[]) {}

  /**
   * The runs in `directories`; those `damaged` names (directory → why) are listed as damaged
   * and never read.
   */
  static async open(
    directories: readonly string[],
    damaged: ReadonlyMap<string, string> = new Map(),
  ): Promise<RunStore> {
    const labels = runLabels(directories);
    const live = await Promise.all(
      directories.map(async (directory, index) => ({
        view: {
          id: String(index),
          label: labels[index]!,
          directory,
          config: null,
          summary: null,
          records: [],
          ...(damaged.has(directory) ? { damage: damaged.get(directory)! } : {}),
        },
        root: await realpath(directory),
        metricsOffset: 0,
      })),
    );
    const store = new RunStore(live);
    await store.refresh();
    return store;
  }

  get runs(): RunView[] {
    return this.live.map((run) => run.view);
  }

  /** Per run id, the metrics byte offset the current views were read up to. */
  offsets(): Record<string, number> {
    return Object.fromEntries(this.live.map((run) => [run.view.id, run.metricsOffset]));
  }

  run(id: string): RunView | null {
    return /^\d+$/.test(id) ? (this.live[Number(id)]?.view ?? null) : null;
  }

  /** Reads what changed on disk; concurrent callers share one read. */
  refresh(): Promise<void> {
    this.refreshing ??= Promise.all(this.live.map((run) => this.refreshRun(run))).then(
      () => {
        this.refreshing = null;
      },
      (error: unknown) => {
        this.refreshing = null;
        throw error;
      },
    );
    return this.refreshing;
  }

  /** Reads one run; a run that fails to read is shown as damaged, never the others' failure. */
  private async refreshRun(run: LiveRun): Promise<void> {
    if (run.view.damage !== undefined) return;
    try {
      await this.readRun(run);
    } catch (error) {
      run.view.damage = error instanceof Error ? error.message : String(error);
    }
  }

  private async readRun(run: LiveRun): Promise<void> {
    // A refused metrics file (a link out of the run) shows as no records here; the metrics
    // endpoint reports it as 403. One odd run must not take the others' view down.
    const chunk = await this.readMetrics(run.view.id, run.metricsOffset).catch((error: unknown) => {
      if (error instanceof RefusedFileError) return null;
      throw error;
    });
    if (chunk) {
      run.view.records = chunk.reset ? chunk.records : [...run.view.records, ...chunk.records];
      run.metricsOffset = chunk.nextOffset;
    }
    run.view.config ??= asObject(await this.readJson(run, runFiles.config));
    // summary.json appears when the run ends and is rewritten if it is resumed and ends again.
    run.view.summary = asObject(await this.readJson(run, runFiles.summary)) as TrainSummary | null;
    run.view.trainerActive = isRunActive(run.view.directory);
  }

  /** A file of run `id` by its path segments inside the run directory. */
  async file(id: string, segments: readonly string[]): Promise<ResolvedFile | null> {
    const run = /^\d+$/.test(id) ? this.live[Number(id)] : undefined;
    return run ? resolveFileInside(run.root, segments) : null;
  }

  /** Records appended to run `id`'s metrics.jsonl since byte `since`. */
  async readMetrics(id: string, since: number): Promise<MetricsChunk> {
    const file = await this.file(id, [runFiles.metrics]);
    if (!file || file.kind === 'missing')
      return { records: [], nextOffset: 0, reset: since > 0, skippedLines: 0 };
    if (file.kind === 'refused')
      throw new RefusedFileError(`${runFiles.metrics} of run ${id} is ${file.reason}`);
    return readMetricsSince(file.path, since);
  }

  /** A JSON file of the run; null while it does not exist, and for a link out of the run. */
  private async readJson(run: LiveRun, name: string): Promise<unknown> {
    const file = await resolveFileInside(run.root, [name]);
    if (file.kind !== 'file') return null;
    try {
      return await readJsonFile(file.path);
    } catch {
      // Written atomically by the trainer, so only a foreign edit (or a file past
      // TEAMTR_MAX_JSON_BYTES, a FIFO, a device) gets here.
      return null;
    }
  }
}
