import { ShapeError, TeamtrError } from '../util/errors.js';
import { formatShape, Tensor } from '../tensor/index.js';

export interface NamedParameter {
  name: string;
  tensor: Tensor;
}

/** A parameter's value outside the graph: what state dicts and checkpoints hold. */
export type { NamedArray } from '../util/named-array.js';
import type { NamedArray } from '../util/named-array.js';
import { addWeightHolder, holderNames, weightHolders } from './weight-holders.js';

/**
 * Base of every layer: named parameters and named children, so a model's parameters have
 * stable dotted names (`layers.0.attention.queryProjection.weight`) for state dicts,
 * checkpoints, optimizers and freezing. Children can be replaced (an adapter wrapping a
 * Linear) without the parent knowing.
 */
export abstract class Module {
  private readonly ownParameters = new Map<string, Tensor>();
  private readonly children = new Map<string, Module>();

  protected registerParameter(name: string, tensor: Tensor): Tensor {
    this.ownParameters.set(name, tensor);
    return tensor;
  }

  protected registerModule<T extends Module>(name: string, module: T): T {
    this.children.set(name, module);
    return module;
  }

  /** Swaps a child for another (e.g. wraps a Linear with an adapter); returns the new one. */
  replaceModule<T extends Module>(name: string, module: T): T {
    if (!this.children.has(name)) {
      throw new Error(
        `no child module "${name}" (children: ${[...this.children.keys()].join(', ')})`,
      );
    }
    this.children.set(name, module);
    return module;
  }

  childModules(): Array<{ name: string; module: Module }> {
    return [...this.children].map(([name, module]) => ({ name, module }));
  }

  namedParameters(prefix = ''): NamedParameter[] {
    const result: NamedParameter[] = [];
    for (const [name, tensor] of this.ownParameters) result.push({ name: prefix + name, tensor });
    for (const [name, child] of this.children)
      result.push(...child.namedParameters(`${prefix}${name}.`));
    return result;
  }

  /** Parameters that currently receive gradients. */
  trainableParameters(): NamedParameter[] {
    return this.namedParameters().filter((entry) => entry.tensor.requiresGrad);
  }

  parameterCount(): number {
    return this.namedParameters().reduce((total, entry) => total + entry.tensor.size, 0);
  }

  /**
   * Stops (or restarts) gradient flow into every parameter of this module. Weights stored in
   * bfloat16 (see `storeFrozenWeightsAsBfloat16`) cannot train, so restarting is refused then.
   */
  setTrainable(trainable: boolean): void {
    const bfloat16 = this.namedParameters().filter(({ tensor }) => tensor.bfloat16);
    if (trainable && bfloat16.length > 0) {
      throw new TeamtrError(
        `cannot train weights stored in bfloat16 (${bfloat16[0]!.name} and ${bfloat16.length - 1} more): bfloat16 is for frozen weights — load the model in float32 to train it fully`,
      );
    }
    // A shared tensor has one `grad` and one `requiresGrad` for all of its holders.
    const shared = trainable ? this.sharedParameters() : [];
    if (shared.length > 0) {
      throw new TeamtrError(
        `cannot train ${shared[0]!.name} (and ${shared.length - 1} more): these frozen weights are shared by ${shared[0]!.holders.join(', ')}, which load the same checkpoint; an agent that trains its full model loads its own copy (no "lora", "trainable": true)`,
      );
    }
    for (const { tensor } of this.namedParameters()) {
      tensor.requiresGrad = trainable;
      if (!trainable) tensor.zeroGrad();
    }
  }

  zeroGrad(): void {
    for (const { tensor } of this.namedParameters()) tensor.zeroGrad();
  }

  /** Copies of every parameter, by name. */
  stateDict(): NamedArray[] {
    return this.namedParameters().map(({ name, tensor }) => ({
      name,
      shape: [...tensor.shape],
      data: new Float32Array(tensor.data),
    }));
  }

  /**
   * Loads values by name. Strict by default: missing, unexpected and misshapen entries are
   * listed together in one error so a user sees everything wrong at once.
   */
  loadStateDict(entries: readonly NamedArray[], options: { strict?: boolean } = {}): void {
    const sharedNames = new Map(
      this.sharedParameters().map((entry) => [entry.name, entry.holders] as const),
    );
    const strict = options.strict ?? true;
    const parameters = new Map(this.namedParameters().map((entry) => [entry.name, entry.tensor]));
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const entry of entries) {
      const target = parameters.get(entry.name);
      if (!target) {
        if (strict) problems.push(`unexpected tensor "${entry.name}"`);
        continue;
      }
      seen.add(entry.name);
      const sameShape =
        entry.shape.length === target.shape.length &&
        entry.shape.every((dimension, index) => dimension === target.shape[index]);
      if (!sameShape) {
        problems.push(
          `tensor "${entry.name}" has shape ${formatShape(entry.shape)}, the model expects ${formatShape(target.shape)}`,
        );
        continue;
      }
      const holders = sharedNames.get(entry.name);
      if (holders !== undefined) {
        // A shared base takes only the values it holds (a checkpoint saved with its base weights).
        if (!sameValues(target, entry.data))
          problems.push(
            `tensor "${entry.name}" is a frozen weight shared by ${holders.join(', ')} and these values differ from it; loading them would change every one of those agents (load this agent's model on its own, e.g. a different checkpoint directory, to give it other base weights)`,
          );
        continue;
      }
      // Rounded to nearest bfloat16 for a weight stored in bfloat16.
      target.assignFloat32(entry.data);
    }
    if (strict) {
      for (const name of parameters.keys())
        if (!seen.has(name)) problems.push(`missing tensor "${name}"`);
    }
    if (problems.length > 0) throw new ShapeError(`cannot load state: ${problems.join('; ')}`);
  }

  /**
   * Stores every frozen matrix (Linear weights, embedding tables: parameters of rank 2 that do
   * not require grad) in bfloat16, rounded to nearest: half the memory, and half the bytes each
   * decode step streams. Trainable parameters (LoRA adapters) and vectors (norms, biases) stay
   * float32. Returns how many tensors were converted. State dicts still hold float32 values
   * (the bfloat16 ones, widened exactly), and loading one rounds into bfloat16 again.
   */
  storeFrozenWeightsAsBfloat16(): number {
    let converted = 0;
    for (const { tensor } of this.namedParameters()) {
      if (tensor.requiresGrad || tensor.rank !== 2 || tensor.bfloat16) continue;
      tensor.storeAsBfloat16();
      converted++;
    }
    return converted;
  }

  /**
   * Frees every parameter's memory; the module is unusable afterwards. Weights shared with other
   * module trees (see `cloneSharingWeights`) are only let go: the last holder frees them.
   */
  destroy(): void {
    for (const { tensor } of this.namedParameters()) {
      const holders = weightHolders(tensor);
      if (holders) {
        holders.delete(this);
        if (holders.size > 0) continue;
      }
      tensor.destroy();
    }
  }

  /**
   * A second module tree over the same parameter tensors, held under `holderName` (an agent's
   * name, which errors about the shared weights quote). The clone has module objects of its
   * own, so adapters attached to it (nn/lora.ts) or layers replaced in it leave this tree
   * alone, while the weights themselves are one copy in memory. Only frozen weights can be
   * shared: a tensor has one gradient, so a tree with trainable parameters is refused. This
   * tree itself does not become a holder: it is the template the clones were made from
   * (models/shared-bases.ts), and the weights are freed when the last clone is destroyed.
   */
  cloneSharingWeights(holderName: string): this {
    const trainable = this.trainableParameters();
    if (trainable.length > 0)
      throw new TeamtrError(
        `cannot share the weights of a model that trains (${trainable[0]!.name} requires grad): only frozen weights can be shared`,
      );
    const clone = cloneModuleTree(this, new Map());
    addWeightHolder(
      this.namedParameters().map(({ tensor }) => tensor),
      clone,
      holderName,
    );
    return clone;
  }

  /**
   * Parameters that belong to a shared group of weights, with the names of their holders. A
   * group stays shared even while one holder is left: its template (models/shared-bases.ts)
   * hands the same tensors to the next agent that loads the checkpoint, e.g. in a swap.
   */
  sharedParameters(): Array<{ name: string; tensor: Tensor; holders: string[] }> {
    return this.namedParameters().flatMap(({ name, tensor }) => {
      const holders = weightHolders(tensor);
      return holders ? [{ name, tensor, holders: holderNames(holders) }] : [];
    });
  }
}

function sameValues(tensor: Tensor, values: Float32Array): boolean {
  const data = tensor.data;
  for (let index = 0; index < data.length; index++)
    if (!Object.is(data[index], values[index])) return false;
  return true;
}

/**
 * Copies a module tree object by object: every Module reachable from its fields, its parameter
 * and child maps and arrays of modules (a model's `blocks`) becomes a new object of the same
 * class with the same own fields, while everything else (tensors, configs, numbers) is the same
 * value. Modules hold no other mutable state (caches live outside them, nn/kv-cache.ts), which
 * is what makes this copy complete. `clones` maps each original to its copy, so a module
 * reached twice (a field and the child map) is copied once.
 */
function cloneModuleTree<T extends Module>(module: T, clones: Map<Module, Module>): T {
  const existing = clones.get(module);
  if (existing) return existing as T;
  const clone = Object.create(Object.getPrototypeOf(module) as object) as T;
  clones.set(module, clone);
  for (const key of Reflect.ownKeys(module)) {
    const descriptor = Object.getOwnPropertyDescriptor(module, key)!;
    if ('value' in descriptor) descriptor.value = cloneFieldValue(descriptor.value, clones);
    Object.defineProperty(clone, key, descriptor);
  }
  return clone;
}

function cloneFieldValue(value: unknown, clones: Map<Module, Module>): unknown {
  if (value instanceof Module) return cloneModuleTree(value, clones);
  if (value instanceof Map)
    return new Map([...value].map(([key, entry]) => [key, cloneFieldValue(entry, clones)]));
  if (Array.isArray(value) && value.some((entry) => entry instanceof Module))
    return value.map((entry) => cloneFieldValue(entry, clones));
  return value;
}
