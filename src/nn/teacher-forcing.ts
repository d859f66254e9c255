import { crossEntropy, tidy } from '../tensor/index.js';
import type { TransformerLM } from './transformer.js';
import { largest } from '../util/extremes.js';

/** A supervised example: context token ids and the continuation the model should produce. */
export interface SupervisedExample {
  input: readonly number[];
  target: readonly number[];
}

/**
 * Teacher-forced cross-entropy on the target tokens only (the input is context), mean over
 * target tokens; accumulates its gradient into the model's parameters and returns the loss.
 * Used to pretrain the built-in models and to align a swapped-in model to its role.
 */
export function supervisedLossAndGradient(
  model: TransformerLM,
  examples: readonly SupervisedExample[],
  padId: number,
): number {
  const length = largest(examples, (example) => example.input.length + example.target.length) - 1;
  const batch = examples.length;
  const ids = new Int32Array(batch * length).fill(padId);
  const targets = new Int32Array(batch * length).fill(padId);
  const weights = new Float32Array(batch * length);
  examples.forEach((example, row) => {
    const sequence = [...example.input, ...example.target];
    for (let t = 0; t < sequence.length - 1; t++) {
      ids[row * length + t] = sequence[t]!;
      targets[row * length + t] = sequence[t + 1]!;
      if (t + 1 >= example.input.length) weights[row * length + t] = 1;
    }
  });
  return tidy(() => {
    const loss = crossEntropy(model.forward({ ids, batch, length }), targets, weights);
    loss.backward();
    return loss.item();
  });
}
