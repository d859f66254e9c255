import type { TrainConfig } from '../config/train-config.js';
import type { RunState } from '../run/run-state.js';
import type { CompletedUpdate, StageHook } from '../run/stage-hooks.js';
import type { TrainableUnit } from '../update/units.js';

/** trustRegion.adaptiveDelta, resolved. */
export type AdaptiveDeltaSettings = NonNullable<TrainConfig['trustRegion']['adaptiveDelta']>;

/**
 * The next δ of an agent from its last update's out-of-sample evidence (docs/method.md §3):
 * grow it while the update's held-out improvement is confidently positive (z ≥ `confidence`)
 * and the update stayed in region; shrink it after a confident regression (z ≤ −`confidence`);
 * keep it otherwise, always within [minDelta, maxDelta]. Pure: the hook below applies it.
 */
export function nextDelta(
  delta: number,
  update: Pick<
    CompletedUpdate,
    'heldOutImprovement' | 'heldOutImprovementStandardError' | 'inRegion'
  >,
  settings: AdaptiveDeltaSettings,
): number {
  const improvement = update.heldOutImprovement;
  const standardError = update.heldOutImprovementStandardError;
  if (improvement === null || !(standardError! > 0)) return delta;
  const z = improvement / standardError!;
  if (z >= settings.confidence && update.inRegion)
    return Math.min(settings.maxDelta, delta * settings.growth);
  if (z <= -settings.confidence) return Math.max(settings.minDelta, delta * settings.shrink);
  return delta;
}

/**
 * Adaptive δ as a stage hook: after each stage, every trainable unit's δ moves by `nextDelta`
 * on its updates of the stage, in order; the radii live in the RunState, so a resumed run
 * continues with the δ it had (re-applied before every stage).
 */
export function adaptiveDeltaHook(
  units: readonly TrainableUnit[],
  settings: AdaptiveDeltaSettings,
): StageHook<never> {
  // Read at every call: a swap may replace a unit in `units`.
  const trainable = () => units.filter((unit) => unit.delta > 0);
  return {
    beforeStage: async (state: RunState) => {
      for (const unit of trainable()) unit.delta = state.deltas?.[unit.name] ?? unit.delta;
      return [];
    },
    afterStage: async (state: RunState, _stage, updates: readonly CompletedUpdate[]) => {
      for (const update of updates) {
        const unit = trainable().find((candidate) => candidate.name === update.agent);
        if (unit) unit.delta = nextDelta(unit.delta, update, settings);
      }
      state.deltas = Object.fromEntries(trainable().map((unit) => [unit.name, unit.delta]));
      return [];
    },
  };
}
