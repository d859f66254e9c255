import type { MetricsRecord, StageRecord, UpdateRecord } from './records.js';
import type { RunState } from './run/run-state.js';

/**
 * Work the run loop does around every stage without knowing what it is (swaps are one). Records
 * a hook returns are written to metrics.jsonl with the stage's, in order; state it keeps across
 * a resume lives in the typed RunState.
 */
export interface StageHook {
  /** Runs before stage `state.stage + 1`; may advance state (e.g. generated tokens). */
  beforeStage(state: RunState): Promise<MetricsRecord[]>;
  /** Runs after `stage` completed (with its updates' records); its records follow the stage's. */
  afterStage(
    state: RunState,
    stage: StageRecord,
    updates: readonly UpdateRecord[],
  ): MetricsRecord[];
}
