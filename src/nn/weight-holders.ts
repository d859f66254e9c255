import type { Tensor } from '../tensor/index.js';

/**
 * Which module trees hold a set of frozen weights shared between them, each under a name (an
 * agent's, for error messages). Several agents that load the same checkpoint keep one copy of
 * its frozen base (models/shared-bases.ts) in module trees of their own (own adapters, own
 * optimizer); freeing or writing a shared tensor would change every one of them, so
 * `Module.destroy`, `Module.loadStateDict` and `LoraLinear.merge` ask here first.
 *
 * Holders are keyed by the module tree itself, not by name: a swap loads the newcomer (same
 * agent name) before it frees the outgoing model, and both hold the base for a moment.
 */
export type WeightHolders = Map<object, string>;

const holdersOfTensor = new WeakMap<Tensor, WeightHolders>();

/** The holders of a shared tensor, or undefined for a tensor with a single owner. */
export function weightHolders(tensor: Tensor): WeightHolders | undefined {
  return holdersOfTensor.get(tensor);
}

/**
 * Registers `holder` (named `name`) as one more holder of `tensors`, which become one shared
 * group: every tensor of it points at the same holder map.
 */
export function addWeightHolder(tensors: readonly Tensor[], holder: object, name: string): void {
  const holders =
    tensors.map((tensor) => holdersOfTensor.get(tensor)).find((found) => found !== undefined) ??
    new Map<object, string>();
  holders.set(holder, name);
  for (const tensor of tensors) holdersOfTensor.set(tensor, holders);
}

/** The holders' names, sorted and without repeats (a swap holds one name twice for a moment). */
export function holderNames(holders: WeightHolders): string[] {
  return [...new Set(holders.values())].sort();
}
