import assert from 'node:assert/strict';
import { availableBackends, setBackend } from '../../backend/index.js';
import { RandomGenerator } from '../../util/random.js';
import { Tensor, noGrad, tidy } from '../index.js';

/** Runs `body` once per available backend (typescript always, native when built). */
export function forEachBackend(body: (backendName: string) => void): void {
  for (const name of availableBackends()) {
    setBackend(name as 'native' | 'typescript');
    try {
      body(name);
    } finally {
      setBackend('auto');
    }
  }
}

/** A leaf tensor of normal(0, std) values that requires grad. */
export function randomLeaf(shape: number[], random: RandomGenerator, std = 1): Tensor {
  const size = shape.reduce((product, dimension) => product * dimension, 1);
  const data = new Float32Array(size);
  for (let index = 0; index < size; index++) data[index] = random.normal() * std;
  return new Tensor(data, shape, true);
}

export interface GradientCheckOptions {
  inputs: Tensor[];
  fn: (inputs: Tensor[]) => Tensor;
  random: RandomGenerator;
  /** Central-difference step. @default 3e-3 */
  step?: number;
  absoluteTolerance?: number;
  relativeTolerance?: number;
  /** Elements checked per input (sampled). @default 24 */
  samples?: number;
}

/**
 * Compares backward() with central finite differences of L = Σ w ⊙ f(inputs) for random w,
 * the loss summed in float64 so the only float32 error is the op's own.
 */
export function checkGradients(options: GradientCheckOptions): void {
  const { inputs, fn, random } = options;
  const step = options.step ?? 3e-3;
  const absoluteTolerance = options.absoluteTolerance ?? 3e-3;
  const relativeTolerance = options.relativeTolerance ?? 3e-2;
  const output = fn(inputs);
  const weights = new Float32Array(output.size);
  for (let index = 0; index < weights.length; index++) weights[index] = random.normal();
  for (const input of inputs) input.zeroGrad();
  output.backward(weights);
  const loss = (): number =>
    noGrad(() =>
      tidy(() => {
        const values = fn(inputs).data;
        let total = 0;
        for (let index = 0; index < values.length; index++)
          total += values[index]! * weights[index]!;
        return total;
      }),
    );
  inputs.forEach((input, inputIndex) => {
    if (!input.requiresGrad) return;
    const analytic = input.grad ?? new Float32Array(input.size);
    const samples = Math.min(options.samples ?? 24, input.size);
    for (let sample = 0; sample < samples; sample++) {
      const index = samples === input.size ? sample : random.nextInt(input.size);
      const original = input.data[index]!;
      input.data[index] = original + step;
      const plus = loss();
      input.data[index] = original - step;
      const minus = loss();
      input.data[index] = original;
      const numeric = (plus - minus) / (2 * step);
      const error = Math.abs(numeric - analytic[index]!);
      const bound =
        absoluteTolerance +
        relativeTolerance * Math.max(Math.abs(numeric), Math.abs(analytic[index]!));
      assert.ok(
        error <= bound,
        `input ${inputIndex} element ${index}: analytic ${analytic[index]} vs numeric ${numeric}`,
      );
    }
  });
}
