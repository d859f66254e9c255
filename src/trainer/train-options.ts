import type { TrainConfig, TrainConfigInput } from './config/train-config.js';
import type { SwapRecord } from './swap/swap.js';
import type { TaskInput } from './setup/task-source.js';

/** A stage's progress, as the trainer reports it when the stage ends. */
export interface StageProgress {
  stage: number;
  generatedTokens: number;
  budget: number;
  /** Team reward of the stage's last batch. */
  reward: number;
  /** Mean token-level KL of the stage's updates. */
  meanKl: number;
  updates: number;
  outOfRegion: number;
  /** The team reward dropped beyond noise during the stage. */
  regression: boolean;
}

/** What the trainer reports while it runs (the CLI draws progress bars from it). */
export type TrainProgress =
  | { kind: 'start'; budget: number; stage: number; generatedTokens: number }
  | ({ kind: 'stage' } & StageProgress)
  | { kind: 'eval'; stage: number; accuracy: number }
  | { kind: 'checkpoint'; stage: number }
  | { kind: 'swap'; record: SwapRecord }
  /** Something the user should act on (e.g. a stage whose updates changed no weights). */
  | { kind: 'warning'; stage: number; message: string };

export interface TrainOptions {
  config: TrainConfigInput | TrainConfig;
  runDirectory: string;
  /** Continue the run in runDirectory from its last checkpoint. */
  resume?: boolean;
  onProgress?: (event: TrainProgress) => void;
  /** When aborted, the trainer finishes the current stage, saves and returns. */
  signal?: AbortSignal;
  /**
   * With `resume`: new addresses (agent name → baseURL) for remote agents whose server moved;
   * the run's config.json is updated (move-endpoints.ts).
   */
  endpoints?: Readonly<Record<string, string>>;
  /**
   * A task defined in code (a Task, or `{ name, problems, reward }` for defineTask) instead of
   * `config.task`. The run records its name and a fingerprint of its problems; resuming it
   * needs the same task again.
   */
  task?: TaskInput;
  /** The module file `task` was loaded from (--task-module): config.json records its SHA-256. */
  taskModule?: string;
}
