import type { TrainConfig } from '../config/train-config.js';
import type { CompletedStage, CompletedUpdate, StageHook } from '../run/stage-hooks.js';
import type { EngineSnapshot } from '../update/engine.js';
import { unitEngine } from '../update/engines.js';
import type { TrainableUnit } from '../update/units.js';

/** A stage undone because its held-out change was confidently negative (trustRegion.rollback). */
export interface RollbackRecord {
  type: 'rollback';
  stage: number;
  generatedTokens: number;
  /** Σ of the stage's updates' held-out improvements, and its standard error. */
  heldOutChange: number;
  heldOutChangeStandardError: number;
  /** The units set back to their parameters and optimizer state before the stage. */
  agents: string[];
}

/** trustRegion.rollback, resolved. */
export type RollbackSettings = NonNullable<TrainConfig['trustRegion']['rollback']>;

/**
 * A stage's out-of-sample change: the sum of its updates' held-out improvements, each measured
 * on its own fresh held-out batch, so their standard errors combine as independent ones
 * (√Σ se²). Null when an update of the stage has no held-out measurement. Pure.
 */
export function stageHeldOutChange(
  updates: readonly Pick<
    CompletedUpdate,
    'heldOutImprovement' | 'heldOutImprovementStandardError'
  >[],
): { change: number; standardError: number } | null {
  if (updates.length === 0) return null;
  let change = 0;
  let variance = 0;
  for (const update of updates) {
    if (update.heldOutImprovement === null || update.heldOutImprovementStandardError === null)
      return null;
    change += update.heldOutImprovement;
    variance += update.heldOutImprovementStandardError ** 2;
  }
  return { change, standardError: Math.sqrt(variance) };
}

/** Roll back when the change is confidently negative: change ≤ −confidence · its standard error. */
export function confidentlyNegative(
  evidence: { change: number; standardError: number },
  confidence: number,
): boolean {
  return evidence.standardError > 0 && evidence.change <= -confidence * evidence.standardError;
}

/**
 * Stage rollback as a stage hook (docs/method.md §3): before each stage it takes a snapshot of
 * every trainable unit (its engine's: parameters and optimizer state); after it, when the
 * stage's held-out change is confidently negative, every unit goes back to its snapshot
 * (parameters and Adam moments and step: the stage is undone as if it had not run, except for
 * the tokens it spent) and a `rollback` record says so. A local unit's snapshot costs one
 * model's parameters and two moment buffers, for the length of a stage.
 */
export function stageRollbackHook(
  units: readonly TrainableUnit[],
  settings: RollbackSettings,
): StageHook<RollbackRecord> {
  let snapshots: Array<{ unit: TrainableUnit; snapshot: EngineSnapshot }> = [];
  return {
    beforeStage: async () => {
      snapshots = [];
      // Read at every stage: a swap may replace a unit in `units`.
      for (const unit of units.filter((candidate) => candidate.delta > 0))
        snapshots.push({ unit, snapshot: await unitEngine(unit).snapshot() });
      return [];
    },
    afterStage: async (_state, stage: CompletedStage, updates: readonly CompletedUpdate[]) => {
      const evidence = stageHeldOutChange(updates);
      if (!evidence || !confidentlyNegative(evidence, settings.confidence)) return [];
      for (const { snapshot } of snapshots) await snapshot.restore();
      const record: RollbackRecord = {
        type: 'rollback',
        stage: stage.stage,
        generatedTokens: stage.generatedTokens,
        heldOutChange: evidence.change,
        heldOutChangeStandardError: evidence.standardError,
        agents: snapshots.map(({ unit }) => unit.name),
      };
      return [record];
    },
  };
}
