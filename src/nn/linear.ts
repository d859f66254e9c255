import { add, matmul, parameter, type Tensor } from '../tensor/index.js';
import { Module } from './module.js';
import type { RandomGenerator } from '../util/random.js';

/** Anything that maps [..., inFeatures] to [..., outFeatures]: a Linear or an adapter around one. */
export interface LinearLayer extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  forward(input: Tensor): Tensor;
}

/**
 * Normal(0, std) initial values from a seeded generator. Zeros are not written (the array
 * starts zeroed): a loader that skips initialization (its generator yields 0) then leaves a
 * large array's pages untouched, so they cost no memory until the checkpoint's values arrive,
 * and none at all for a matrix that goes straight into bfloat16.
 */
export function normalValues(
  size: number,
  standardDeviation: number,
  random: RandomGenerator,
): Float32Array {
  const values = new Float32Array(size);
  for (let index = 0; index < size; index++) {
    const value = random.normal() * standardDeviation;
    if (value !== 0) values[index] = value;
  }
  return values;
}

/**
 * y = x·Wᵀ + b, with W stored [out, in] as in PyTorch and Hugging Face checkpoints, so
 * weights load without transposes and the product is one sgemm with a transposed operand.
 */
export class Linear extends Module implements LinearLayer {
  readonly weight: Tensor;
  readonly bias: Tensor | null;

  constructor(
    readonly inFeatures: number,
    readonly outFeatures: number,
    options: { bias: boolean; random: RandomGenerator; initStd?: number },
  ) {
    super();
    const std = options.initStd ?? 0.02;
    this.weight = this.registerParameter(
      'weight',
      parameter(normalValues(outFeatures * inFeatures, std, options.random), [
        outFeatures,
        inFeatures,
      ]),
    );
    this.bias = options.bias
      ? this.registerParameter('bias', parameter(new Float32Array(outFeatures), [outFeatures]))
      : null;
  }

  forward(input: Tensor): Tensor {
    // A frozen weight sums each output in one order whatever the row count, so a decoded
    // token's log-prob equals the one scoring recomputes bit for bit (tensor/ops/matmul.ts).
    // A trainable one keeps the ordinary product: with few rows and the weights in cache (the
    // small models trained in full) the fixed order runs at 0.6–0.9× of it.
    const fixedOrder = !this.weight.requiresGrad;
    const product = matmul(input, this.weight, { transposeB: true, fixedOrder });
    return this.bias ? add(product, this.bias) : product;
  }
}
