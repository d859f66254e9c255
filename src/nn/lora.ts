import { addScaled, matmul, parameter, type Tensor } from '../tensor/index.js';
import { TeamtrError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import { Linear, type LinearLayer } from './linear.js';
import { Module } from './module.js';
import { holderNames, weightHolders } from './weight-holders.js';

/**
 * Low-rank adapters (LoRA; Hu et al., 2021): y = x·Wᵀ + b + s·(x·Aᵀ)·Bᵀ with A [rank, in],
 * B [out, rank] and s = alpha / rank (or alpha / √rank with rsLoRA). B starts at zero, so a
 * fresh adapter leaves the model unchanged; only A and B train. Merging folds s·B·A into W for
 * inference and export; unmerging takes it out again.
 *
 * The adapter registers the wrapped Linear's weight and bias under their own names, so a
 * wrapped model's state dict keeps every base name (`...queryProjection.weight`) and adds
 * `...queryProjection.loraA` / `.loraB`.
 */

export interface LoraLayerSettings {
  rank: number;
  alpha: number;
  /** Scale by alpha / √rank instead of alpha / rank (rsLoRA). @default false */
  rankStabilized?: boolean;
}

export class LoraLinear extends Module implements LinearLayer {
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly rank: number;
  readonly alpha: number;
  readonly rankStabilized: boolean;
  /** The multiplier s of B·A. */
  readonly scaling: number;
  /** [rank, in] */
  readonly loraA: Tensor;
  /** [out, rank] */
  readonly loraB: Tensor;
  private isMerged = false;

  /** `random` draws A (uniform ±1/√in, as PEFT's default); B starts at zero. */
  constructor(
    readonly base: Linear,
    settings: LoraLayerSettings,
    random: RandomGenerator,
  ) {
    super();
    const { rank, alpha } = settings;
    if (!Number.isInteger(rank) || rank <= 0)
      throw new TeamtrError(`LoRA rank must be a positive integer, got ${rank}`);
    if (!(alpha > 0)) throw new TeamtrError(`LoRA alpha must be positive, got ${alpha}`);
    this.inFeatures = base.inFeatures;
    this.outFeatures = base.outFeatures;
    this.rank = rank;
    this.alpha = alpha;
    this.rankStabilized = settings.rankStabilized ?? false;
    this.scaling = this.rankStabilized ? alpha / Math.sqrt(rank) : alpha / rank;
    this.registerParameter('weight', base.weight);
    if (base.bias) this.registerParameter('bias', base.bias);
    const bound = 1 / Math.sqrt(this.inFeatures);
    const initialA = new Float32Array(rank * this.inFeatures);
    for (let index = 0; index < initialA.length; index++)
      initialA[index] = (2 * random.nextDouble() - 1) * bound;
    this.loraA = this.registerParameter('loraA', parameter(initialA, [rank, this.inFeatures]));
    this.loraB = this.registerParameter(
      'loraB',
      parameter(new Float32Array(this.outFeatures * rank), [this.outFeatures, rank]),
    );
  }

  get merged(): boolean {
    return this.isMerged;
  }

  /** [..., in] → [..., out]. */
  forward(input: Tensor): Tensor {
    const base = this.base.forward(input);
    if (this.isMerged) return base;
    // In one summation order whatever the row count, as the base's bfloat16 product: a decode
    // step's log-probs then equal scoring's bit for bit (tensor/ops/matmul-bfloat16.ts).
    const down = matmul(input, this.loraA, { transposeB: true, fixedOrder: true }); // [..., rank]
    const up = matmul(down, this.loraB, { transposeB: true, fixedOrder: true }); // [..., out]
    // base + fround(s·up) in one backend pass, the bits of add(base, scale(up, s)).
    return addScaled(base, up, this.scaling);
  }

  /** s·B·A as a [out, in] array. */
  delta(): Float32Array {
    const { rank, inFeatures, outFeatures, scaling } = this;
    const a = this.loraA.data;
    const b = this.loraB.data;
    const result = new Float32Array(outFeatures * inFeatures);
    for (let row = 0; row < outFeatures; row++) {
      for (let inner = 0; inner < rank; inner++) {
        const factor = scaling * b[row * rank + inner]!;
        if (factor === 0) continue;
        const offset = inner * inFeatures;
        const target = row * inFeatures;
        for (let column = 0; column < inFeatures; column++)
          result[target + column]! += factor * a[offset + column]!;
      }
    }
    return result;
  }

  /**
   * W ← W + s·B·A; the forward pass then skips the adapter. Refused for a base stored in
   * bfloat16: W + s·B·A rounded to bfloat16 would lose most of a small update (an adapter's
   * delta is often below bfloat16's 2⁻⁸ relative step), and unmerging could not restore W.
   * Refused too for a base shared by several agents (models/shared-bases.ts): W is theirs as
   * well, so folding this agent's update into it would change their outputs. Exports do not
   * need a merge (they add s·B·A to a copy of W).
   */
  merge(): void {
    if (this.isMerged) return;
    const holders = weightHolders(this.base.weight);
    if (holders) {
      throw new TeamtrError(
        `cannot merge a LoRA adapter into a base weight shared by the agents ${holderNames(holders).join(', ')} (they load the same checkpoint and keep one frozen copy of it): merging would change all of their weights; keep the adapter unmerged (it runs as is, and exports merge into a copy), or give the agent a checkpoint directory of its own`,
      );
    }
    if (this.base.weight.bfloat16) {
      throw new TeamtrError(
        'cannot merge a LoRA adapter into a base weight stored in bfloat16: the merged weight would be rounded to bfloat16 and lose the update; keep the adapter unmerged (it runs as is), or load the base in float32 to merge',
      );
    }
    const weight = this.base.weight.data;
    const delta = this.delta();
    for (let index = 0; index < weight.length; index++) weight[index]! += delta[index]!;
    this.isMerged = true;
  }

  /** W ← W − s·B·A (up to float32 rounding of the round trip). */
  unmerge(): void {
    if (!this.isMerged) return;
    const weight = this.base.weight.data;
    const delta = this.delta();
    for (let index = 0; index < weight.length; index++) weight[index]! -= delta[index]!;
    this.isMerged = false;
  }
}

/** Where a Linear sits: its parent module and its name there. */
interface LinearSite {
  path: string;
  parent: Module;
  name: string;
  layer: Module;
}

function linearSites(root: Module, prefix = ''): LinearSite[] {
  const sites: LinearSite[] = [];
  for (const { name, module } of root.childModules()) {
    const childPath = `${prefix}${name}`;
    if (module instanceof Linear || module instanceof LoraLinear)
      sites.push({ path: childPath, parent: root, name, layer: module });
    else sites.push(...linearSites(module, `${childPath}.`));
  }
  return sites;
}

/**
 * Swaps a child Linear for `layer` in both the parent's child list (names, state dicts) and the
 * field its forward pass reads.
 */
function replaceLinear(site: LinearSite, layer: LinearLayer): void {
  site.parent.replaceModule(site.name, layer);
  const descriptor = Object.getOwnPropertyDescriptor(site.parent, site.name);
  if (descriptor && 'value' in descriptor) Reflect.set(site.parent, site.name, layer);
  if (Reflect.get(site.parent, site.name) !== layer) {
    throw new Error(
      `cannot attach an adapter at ${site.path}: the parent's "${site.name}" field did not take the new layer`,
    );
  }
}

export interface ApplyLoraOptions extends LoraLayerSettings {
  /** Linear names to adapt wherever they occur, e.g. ["queryProjection", "valueProjection"]. */
  targetModules: readonly string[];
  random: RandomGenerator;
}

/**
 * Wraps every Linear whose name is in `targetModules` with a LoraLinear and freezes everything
 * else: afterwards `trainableParameters()` lists only the adapters. Returns the adapters by
 * module path (e.g. `blocks.0.attention.queryProjection`).
 */
export function applyLora(model: Module, options: ApplyLoraOptions): Map<string, LoraLinear> {
  const sites = linearSites(model);
  const available = [...new Set(sites.map((site) => site.name))].sort();
  const unknown = options.targetModules.filter((name) => !available.includes(name));
  if (unknown.length > 0 || options.targetModules.length === 0) {
    const what =
      unknown.length > 0
        ? `unknown target module${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => `"${name}"`).join(', ')}`
        : 'no target modules';
    throw new TeamtrError(`LoRA: ${what} (this model's linear layers: ${available.join(', ')})`);
  }
  model.setTrainable(false);
  const adapters = new Map<string, LoraLinear>();
  for (const site of sites) {
    if (!options.targetModules.includes(site.name)) continue;
    if (site.layer instanceof LoraLinear)
      throw new TeamtrError(`LoRA: ${site.path} already has an adapter`);
    const adapter = new LoraLinear(site.layer as Linear, options, options.random);
    replaceLinear(site, adapter);
    adapters.set(site.path, adapter);
  }
  return adapters;
}

/** Puts an adapter at one module path (loading saved adapters of any rank per module). */
export function attachLoraAt(
  model: Module,
  modulePath: string,
  settings: LoraLayerSettings,
  random: RandomGenerator,
): LoraLinear {
  const site = linearSites(model).find((candidate) => candidate.path === modulePath);
  if (!site) throw new TeamtrError(`LoRA: the model has no linear layer at ${modulePath}`);
  if (site.layer instanceof LoraLinear)
    throw new TeamtrError(`LoRA: ${modulePath} already has an adapter`);
  const adapter = new LoraLinear(site.layer as Linear, settings, random);
  for (const { tensor } of site.layer.namedParameters()) {
    tensor.requiresGrad = false;
    tensor.zeroGrad();
  }
  replaceLinear(site, adapter);
  return adapter;
}

/** The adapters of a model by module path, in model order. */
export function loraLayers(model: Module): Map<string, LoraLinear> {
  return new Map(
    linearSites(model)
      .filter((site) => site.layer instanceof LoraLinear)
      .map((site) => [site.path, site.layer as LoraLinear]),
  );
}

export function mergeLora(model: Module): void {
  for (const adapter of loraLayers(model).values()) adapter.merge();
}

export function unmergeLora(model: Module): void {
  for (const adapter of loraLayers(model).values()) adapter.unmerge();
}

/** Replaces every adapter by its base Linear (merged first when `merge`), restoring a plain model. */
export function removeLora(model: Module, options: { merge: boolean }): void {
  for (const site of linearSites(model)) {
    if (!(site.layer instanceof LoraLinear)) continue;
    const adapter = site.layer;
    if (options.merge) adapter.merge();
    else adapter.unmerge();
    replaceLinear(site, adapter.base);
    adapter.loraA.destroy();
    adapter.loraB.destroy();
  }
}
