/**
 * What the tests of shared prefixes with and without gradients share
 * (shared-prefix-scoring.test.ts, shared-prefix-gradients.test.ts, trainer/step-passes.test.ts):
 * the model they build and how they compare a shared pass with the plain one.
 */
import assert from 'node:assert/strict';
import type { ModelConfigInput } from '../config.js';

/**
 * At least 64 wide, so frozen float32 weights take matmulGemmOrder; widths off the kernels'
 * 16-float vectors, so tails run too.
 */
export const sharedPrefixTestConfig: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 53,
  hiddenSize: 72,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediateSize: 100,
  maxPositions: 96,
};

export function assertBitForBit(actual: Float32Array, expected: Float32Array, label: string): void {
  assert.equal(actual.length, expected.length, label);
  for (let index = 0; index < expected.length; index++)
    if (!Object.is(actual[index], expected[index]))
      assert.fail(`${label}[${index}]: ${actual[index]} vs ${expected[index]}`);
}

/**
 * The shared pass sums a prefix key's gradient over its items before it flows through the
 * prefix's layers, where the plain pass sums the items' contributions to each weight's gradient
 * later, and the backward's products run over other row counts (natively, other kernels): the
 * gradients move in their last bits, which this sharp tiny model amplifies. Measured: at most
 * 2.0e-5 of an entry (or of a hundredth of the largest, for entries that cancel to near zero)
 * natively, 6e-6 on the TypeScript backend; 1e-4 leaves five times that, as the micro-batch
 * tests of gradient-step.test.ts allow. Losing a prefix's share of one item, or attending to
 * another group's prompt, moves gradients by percents.
 */
export function assertCloseGradients(
  actual: Float32Array[],
  expected: Float32Array[],
  label: string,
) {
  const largest = Math.max(...expected.flatMap((values) => [...values].map(Math.abs)));
  assert.ok(largest > 0, `${label}: there is a gradient`);
  expected.forEach((values, index) =>
    values.forEach((value, position) => {
      const got = actual[index]![position]!;
      assert.ok(
        Math.abs(got - value) <= 1e-4 * Math.max(Math.abs(value), 1e-2 * largest),
        `${label}: parameter ${index}[${position}]: ${got} vs ${value}`,
      );
    }),
  );
}
