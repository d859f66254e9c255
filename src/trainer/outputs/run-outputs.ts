import { createHash } from 'node:crypto';
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import type { Team } from '../../team/team.js';
import type { TeamBatch } from '../../team/types.js';
import { ConfigError } from '../../util/errors.js';
import type { TrainConfig } from '../config/train-config.js';
import { runFiles } from '../run/run-directory.js';
import type { RunState } from '../run/run-state.js';
import type { SummaryEntry, TensorboardEvent } from './tensorboard-events.js';
import { scalarsOf, TensorboardFile } from './tensorboard.js';
import { describeTranscripts } from './transcript-text.js';
import { appendTranscripts, keepTranscriptsThrough, sampleTranscripts } from './transcripts.js';
import { startWandbRun, type ModuleImporter, type WandbRun } from './wandb.js';

/**
 * What a run writes besides its metrics and checkpoints (the config's `tracking`): a few
 * transcripts of every stage, the metrics as TensorBoard events, and, live, to W&B. The run
 * loop calls `start` once its state is known, `stage` with each stage's last batch, `sync`
 * after each append to metrics.jsonl (new records are read from the file, so every record the
 * run writes is tracked whoever wrote it), and `close` at the end. A resumed run's outputs are
 * cut back to its checkpoint's stage, as metrics.jsonl is, and written again from there.
 */
export class RunOutputs {
  private tensorboard: TensorboardFile | null = null;
  /** Bytes of metrics.jsonl already tracked. */
  private metricsOffset = 0;

  private constructor(
    private readonly config: TrainConfig,
    private readonly runDirectory: string,
    private readonly wandb: WandbRun | null,
  ) {}

  /** Starts W&B when asked for (online), before anything of the run is computed. */
  static async open(
    config: TrainConfig,
    runDirectory: string,
    importModule?: ModuleImporter,
  ): Promise<RunOutputs> {
    const { wandb, tensorboard } = config.tracking;
    if (wandb && wandb.mode === 'offline' && !tensorboard)
      throw new ConfigError(
        'tracking.wandb',
        'W&B offline keeps its record in the run’s TensorBoard event file (wandb sync RUN_DIR uploads it); turn tracking.tensorboard on, or set tracking.wandb.mode to online',
      );
    const live =
      wandb?.mode === 'online'
        ? await startWandbRun(
            wandb,
            {
              id: createHash('sha256')
                .update(path.resolve(runDirectory))
                .digest('hex')
                .slice(0, 16),
              name: path.basename(path.resolve(runDirectory)),
              config,
            },
            importModule,
          )
        : null;
    return new RunOutputs(config, runDirectory, live);
  }

  /** Cuts the outputs back to `state` (nothing of a run that starts afresh). */
  async start(state: RunState): Promise<void> {
    const keepThrough = state.metricsBytes > 0 ? state.stage : -1;
    this.metricsOffset = state.metricsBytes;
    await keepTranscriptsThrough(this.runDirectory, keepThrough);
    if (this.config.tracking.tensorboard)
      this.tensorboard = await TensorboardFile.open(this.runDirectory, keepThrough);
    this.sync();
  }

  /** Keeps a few episodes of the stage's last batch (transcripts.jsonl, and as TensorBoard text). */
  stage(stage: number, batch: TeamBatch, team: Team): void {
    const transcripts = sampleTranscripts(
      team,
      batch,
      stage,
      this.config.tracking.transcriptsPerStage,
    );
    appendTranscripts(this.runDirectory, transcripts);
    if (transcripts.length > 0)
      this.tensorboard?.append([
        {
          wallTime: Date.now() / 1000,
          step: stage,
          values: [{ tag: 'transcripts', text: describeTranscripts(transcripts) }],
        },
      ]);
  }

  /** Tracks the records appended to metrics.jsonl since the last call. */
  sync(): void {
    const records = this.newMetrics();
    const wallTime = Date.now() / 1000;
    const events: TensorboardEvent[] = [];
    const byStep = new Map<number, SummaryEntry[]>();
    for (const record of records) {
      const scalars = scalarsOf(record);
      if (!scalars) continue;
      events.push({ wallTime, ...scalars });
      byStep.set(scalars.step, [...(byStep.get(scalars.step) ?? []), ...scalars.values]);
    }
    this.tensorboard?.append(events);
    for (const [step, values] of [...byStep.entries()].sort((a, b) => a[0] - b[0]))
      this.wandb?.log(
        Object.fromEntries(
          values.flatMap((value) => ('scalar' in value ? [[value.tag, value.scalar]] : [])),
        ),
        step,
      );
  }

  async close(): Promise<void> {
    await this.wandb?.finish();
  }

  /** The complete records of metrics.jsonl past the tracked offset. */
  private newMetrics(): Record<string, unknown>[] {
    const file = path.join(this.runDirectory, runFiles.metrics);
    if (!existsSync(file)) return [];
    const descriptor = openSync(file, 'r');
    try {
      const length = fstatSync(descriptor).size - this.metricsOffset;
      if (length <= 0) return [];
      const bytes = Buffer.alloc(length);
      readSync(descriptor, bytes, 0, length, this.metricsOffset);
      const complete = bytes.lastIndexOf(0x0a) + 1;
      this.metricsOffset += complete;
      return bytes
        .subarray(0, complete)
        .toString('utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    } finally {
      closeSync(descriptor);
    }
  }
}
