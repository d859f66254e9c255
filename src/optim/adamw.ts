import { getBackend } from '../backend/index.js';
import { ShapeError } from '../util/errors.js';
import type { NamedArray, NamedParameter } from '../nn/module.js';

export interface AdamWSettings {
  /** @default 3e-4 */
  learningRate: number;
  /** @default 0.9 */
  beta1: number;
  /** @default 0.999 */
  beta2: number;
  /** @default 1e-8 */
  epsilon: number;
  /** Decoupled weight decay (Loshchilov & Hutter), applied as θ ← θ − lr·λ·θ. @default 0.01 */
  weightDecay: number;
  /** Parameters whose name matches get no weight decay (norms, biases, embeddings). */
  noDecay?: (name: string) => boolean;
}

export const defaultAdamWSettings: AdamWSettings = {
  learningRate: 3e-4,
  beta1: 0.9,
  beta2: 0.999,
  epsilon: 1e-8,
  weightDecay: 0.01,
};

/** Norm weights and biases are conventionally exempt from weight decay. */
export const decayExempt = (name: string): boolean =>
  name.endsWith('.bias') || /norm\./i.test(name);

/** Serializable optimizer state: moments by parameter name plus the step count. */
export interface AdamWState {
  step: number;
  moments: NamedArray[];
}

/**
 * AdamW over a fixed list of named parameters. The update itself is one fused backend kernel
 * per parameter (moments, bias correction, decay and the step in a single pass).
 */
export class AdamW {
  step = 0;
  private readonly firstMoments: Float32Array[];
  private readonly secondMoments: Float32Array[];

  constructor(
    readonly parameters: readonly NamedParameter[],
    public settings: AdamWSettings = defaultAdamWSettings,
  ) {
    this.firstMoments = parameters.map(({ tensor }) => new Float32Array(tensor.size));
    this.secondMoments = parameters.map(({ tensor }) => new Float32Array(tensor.size));
  }

  /**
   * Applies one update from the accumulated gradients (parameters with no gradient are
   * skipped), scaling gradients by `gradientScale` first (from clipping).
   */
  update(options: { learningRate?: number; gradientScale?: number } = {}): void {
    this.step++;
    const backend = getBackend();
    const learningRate = options.learningRate ?? this.settings.learningRate;
    this.parameters.forEach(({ name, tensor }, index) => {
      if (!tensor.grad) return;
      const decay = this.settings.noDecay?.(name) ? 0 : this.settings.weightDecay;
      backend.adamw({
        parameter: tensor.data,
        gradient: tensor.grad,
        firstMoment: this.firstMoments[index]!,
        secondMoment: this.secondMoments[index]!,
        learningRate,
        beta1: this.settings.beta1,
        beta2: this.settings.beta2,
        epsilon: this.settings.epsilon,
        weightDecay: decay,
        step: this.step,
        gradientScale: options.gradientScale ?? 1,
      });
    });
  }

  zeroGrad(): void {
    for (const { tensor } of this.parameters) tensor.zeroGrad();
  }

  stateDict(): AdamWState {
    const moments: NamedArray[] = [];
    this.parameters.forEach(({ name, tensor }, index) => {
      moments.push({
        name: `${name}.first_moment`,
        shape: [...tensor.shape],
        data: this.firstMoments[index]!.slice(),
      });
      moments.push({
        name: `${name}.second_moment`,
        shape: [...tensor.shape],
        data: this.secondMoments[index]!.slice(),
      });
    });
    return { step: this.step, moments };
  }

  loadStateDict(state: AdamWState): void {
    const byName = new Map(state.moments.map((entry) => [entry.name, entry]));
    const problems: string[] = [];
    this.parameters.forEach(({ name, tensor }, index) => {
      for (const [suffix, target] of [
        ['first_moment', this.firstMoments[index]!],
        ['second_moment', this.secondMoments[index]!],
      ] as const) {
        const entry = byName.get(`${name}.${suffix}`);
        if (!entry) problems.push(`missing "${name}.${suffix}"`);
        else if (entry.data.length !== tensor.size)
          problems.push(
            `"${name}.${suffix}" has ${entry.data.length} values, expected ${tensor.size}`,
          );
        else target.set(entry.data);
      }
    });
    if (problems.length > 0)
      throw new ShapeError(`optimizer state does not match the model: ${problems.join('; ')}`);
    this.step = state.step;
  }
}
