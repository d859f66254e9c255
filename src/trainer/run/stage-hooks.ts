import type { RunState } from './run-state.js';

/**
 * Work the run loop does around every stage without knowing what it is (swaps, adaptive δ and
 * stage rollback are hooks). Records a hook returns (`Produced`) are written to metrics.jsonl
 * with the stage's, in order; state it keeps across a resume lives in the typed RunState.
 */
export interface StageHook<Produced> {
  /** Runs before stage `state.stage + 1`; may advance state (e.g. generated tokens). */
  beforeStage(state: RunState): Promise<Produced[]>;
  /** Runs after `stage` completed (with its updates' records); its records follow the stage's. */
  afterStage(
    state: RunState,
    stage: CompletedStage,
    updates: readonly CompletedUpdate[],
  ): Promise<Produced[]>;
}

/** What a hook reads of the stage that ran (of its StageRecord). */
export interface CompletedStage {
  stage: number;
  /** Cumulative generated tokens after the stage. */
  generatedTokens: number;
  /** Mean reward of the stage's last batch (the team after the stage). */
  rewardAfter: number;
}

/** What a hook reads of each update of the stage (of its UpdateRecord). */
export interface CompletedUpdate {
  agent: string;
  inRegion: boolean;
  /** The update's paired reward change on held-out prompts (null: not measured). */
  heldOutImprovement: number | null;
  heldOutImprovementStandardError: number | null;
}
