import type { NamedParameter } from '../../nn/module.js';

/**
 * A copy of trainable parameters: the last in-region point of a trust-region update. Only
 * parameters: the optimizer's moment estimates are statistics of the gradients seen, which stay
 * valid when a step is shortened or undone, so Adam keeps adapting across updates. (Restoring
 * them too would pin Adam at its first, sign-like step forever.)
 */
export interface ParameterSnapshot {
  values: Float32Array[];
}

export function captureSnapshot(parameters: readonly NamedParameter[]): ParameterSnapshot {
  return { values: parameters.map(({ tensor }) => tensor.data.slice()) };
}

export function restoreSnapshot(
  parameters: readonly NamedParameter[],
  snapshot: ParameterSnapshot,
): void {
  parameters.forEach(({ tensor }, index) => tensor.data.set(snapshot.values[index]!));
}

/** θ ← θ_from + α·(θ_to − θ_from), for a backtracking line search along a step. */
export function interpolateParameters(
  parameters: readonly NamedParameter[],
  from: ParameterSnapshot,
  to: Float32Array[],
  alpha: number,
): void {
  parameters.forEach(({ tensor }, index) => {
    const start = from.values[index]!;
    const end = to[index]!;
    const data = tensor.data;
    for (let position = 0; position < data.length; position++) {
      data[position] = start[position]! + alpha * (end[position]! - start[position]!);
    }
  });
}
