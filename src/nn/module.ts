import { ShapeError, TeamtrError } from '../util/errors.js';
import { formatShape, Tensor } from '../tensor/index.js';

export interface NamedParameter {
  name: string;
  tensor: Tensor;
}

/** A parameter's value outside the graph: what state dicts and checkpoints hold. */
export type { NamedArray } from '../util/named-array.js';
import type { NamedArray } from '../util/named-array.js';

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

  /** Frees every parameter's memory; the module is unusable afterwards. */
  destroy(): void {
    for (const { tensor } of this.namedParameters()) tensor.destroy();
  }
}
