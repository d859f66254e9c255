import type { AdamWState } from '../../optim/adamw.js';
import type { TrainConfig } from '../config/train-config.js';
import { captureSnapshot, restoreSnapshot, type ParameterSnapshot } from '../update/parameter-state.js';
import type { MetricsRecord, RollbackRecord, StageRecord, UpdateRecord } from '../records.js';
import type { RunState } from '../run/run-state.js';
import type { StageHook } from '../stage-hooks.js';
import type { LocalUnit, TrainableUnit } from '../update/units.js';

/** trustRegion.rollback, resolved. */
export type RollbackSettings = NonNullable<TrainConfig['trustRegion']['rollback']>;

/**
 * A stage's out-of-sample change: the sum of its updates' held-out improvements, each measured
 * on its own fresh held-out batch, so their standard errors combine as independent ones
 * (√Σ se²). Null when an update of the stage has no held-out measurement. Pure.
 */
export function stageHeldOutChange(
  updates: readonly Pick<UpdateRecord, 'heldOutImprovement' | 'heldOutImprovementStandardError'>[],
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

interface UnitSnapshot {
  unit: LocalUnit;
  parameters: ParameterSnapshot;
  optimizer: AdamWState;
}

/**
 * Stage rollback as a stage hook (docs/method.md §3): before each stage it copies every
 * trainable unit's parameters and optimizer state; after it, when the stage's held-out change
 * is confidently negative, every unit goes back to that copy (parameters and Adam moments and
 * step: the stage is undone as if it had not run, except for the tokens it spent) and a
 * `rollback` record says so. The copy costs one model's parameters and two moment buffers per
 * trainable unit, for the length of a stage.
 */
export function stageRollbackHook(
  units: readonly TrainableUnit[],
  settings: RollbackSettings,
): StageHook {
  let snapshots: UnitSnapshot[] = [];
  return {
    beforeStage: async (): Promise<MetricsRecord[]> => {
      // Read at every stage: a swap may replace a unit in `units`.
      snapshots = units
        // Units on a Tinker service are refused with rollback (build-team.ts).
        .filter((unit): unit is LocalUnit => unit.kind !== 'tinker' && unit.delta > 0)
        .map((unit) => ({
          unit,
          parameters: captureSnapshot(unit.model.trainableParameters()),
          optimizer: unit.optimizer.stateDict(),
        }));
      return [];
    },
    afterStage: (
      _state: RunState,
      stage: StageRecord,
      updates: readonly UpdateRecord[],
    ): MetricsRecord[] => {
      const evidence = stageHeldOutChange(updates);
      if (!evidence || !confidentlyNegative(evidence, settings.confidence)) return [];
      for (const { unit, parameters, optimizer } of snapshots) {
        restoreSnapshot(unit.model.trainableParameters(), parameters);
        unit.optimizer.loadStateDict(optimizer);
      }
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
