import { add, layerNorm, parameter, rmsNorm, type Tensor } from '../tensor/index.js';
import { addRmsNorm } from '../tensor/ops/residual-norm.js';
import type { ModelConfig, ModelFeatures } from './config.js';
import { Module } from './module.js';

/**
 * The transformer's norms (transformer.ts): RMSNorm for the Llama family, LayerNorm for GPT-2,
 * each with the residual add before it in one step.
 */

/**
 * What the two norms share: a learned per-feature scale `weight` (ones at the start, so the
 * norm starts as a pure normalization) and ε. They differ in the statistics and LayerNorm's bias.
 */
export abstract class ScaledNorm extends Module {
  readonly weight: Tensor;
  constructor(
    size: number,
    readonly epsilon: number,
  ) {
    super();
    this.weight = this.registerParameter(
      'weight',
      parameter(new Float32Array(size).fill(1), [size]),
    );
  }
  abstract forward(input: Tensor): Tensor;
  /** The residual add before the norm, and the norm: (x + δ, norm(x + δ)). */
  abstract addThenForward(input: Tensor, residual: Tensor): ResidualStream;
}

/** The residual stream x and its norm for the sublayer that reads it. */
export interface ResidualStream {
  /** [B, T, C] */
  hidden: Tensor;
  /** [B, T, C] norm(hidden) */
  normed: Tensor;
}

export class RMSNorm extends ScaledNorm {
  forward(input: Tensor): Tensor {
    return rmsNorm(input, this.weight, this.epsilon);
  }
  addThenForward(input: Tensor, residual: Tensor): ResidualStream {
    const { sum, normed } = addRmsNorm(input, residual, this.weight, this.epsilon);
    return { hidden: sum, normed };
  }
}

export class LayerNorm extends ScaledNorm {
  readonly bias: Tensor;
  constructor(size: number, epsilon: number) {
    super(size, epsilon);
    this.bias = this.registerParameter('bias', parameter(new Float32Array(size), [size]));
  }
  forward(input: Tensor): Tensor {
    return layerNorm(input, this.weight, this.bias, this.epsilon);
  }
  addThenForward(input: Tensor, residual: Tensor): ResidualStream {
    const hidden = add(input, residual);
    return { hidden, normed: this.forward(hidden) };
  }
}

export type Norm = RMSNorm | LayerNorm;

export function createNorm(config: ModelConfig, features: ModelFeatures): Norm {
  return features.norm === 'layernorm'
    ? new LayerNorm(config.hiddenSize, config.normEpsilon)
    : new RMSNorm(config.hiddenSize, config.normEpsilon);
}
