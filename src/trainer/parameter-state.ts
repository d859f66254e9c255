import type { AdamW } from '../optim/adamw.js';
import type { NamedParameter } from '../nn/module.js';

/** A copy of trainable parameters and their optimizer moments: the last in-region point. */
export interface ParameterSnapshot {
  values: Float32Array[];
  optimizer: ReturnType<AdamW['stateDict']>;
}

export function captureSnapshot(parameters: readonly NamedParameter[], optimizer: AdamW): ParameterSnapshot {
  return { values: parameters.map(({ tensor }) => tensor.data.slice()), optimizer: optimizer.stateDict() };
}

export function restoreSnapshot(parameters: readonly NamedParameter[], optimizer: AdamW, snapshot: ParameterSnapshot): void {
  parameters.forEach(({ tensor }, index) => tensor.data.set(snapshot.values[index]!));
  optimizer.loadStateDict(snapshot.optimizer);
}

/** θ ← θ_from + α·(θ_to − θ_from), for a backtracking line search along a step. */
export function interpolateParameters(parameters: readonly NamedParameter[], from: ParameterSnapshot, to: Float32Array[], alpha: number): void {
  parameters.forEach(({ tensor }, index) => {
    const start = from.values[index]!;
    const end = to[index]!;
    const data = tensor.data;
    for (let position = 0; position < data.length; position++) {
      data[position] = start[position]! + alpha * (end[position]! - start[position]!);
    }
  });
}
