import type { UnitEngine } from './engine.js';
import { LocalEngine } from './local/engine.js';
import { TinkerEngine } from './tinker/engine.js';
import type { TinkerUnit, TrainableUnit } from './units.js';

/** The engine of a unit: the one place that tells a unit on a Tinker service from a local one. */
export function unitEngine(unit: TrainableUnit): UnitEngine {
  return isOnService(unit) ? new TinkerEngine(unit) : new LocalEngine(unit);
}

export function isOnService(unit: TrainableUnit): unit is TinkerUnit {
  return unit.kind === 'tinker';
}
