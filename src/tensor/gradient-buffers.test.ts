import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { getBackend } from '../backend/index.js';
import { RandomGenerator } from '../util/random.js';
import { allocate, clearPool, memoryStatistics, release } from './memory.js';
import { matmul } from './ops/matmul.js';
import { add } from './ops/elementwise.js';
import { Tensor } from './tensor.js';

function randomTensor(random: RandomGenerator, shape: number[], requiresGrad: boolean): Tensor {
  const size = shape.reduce((product, dimension) => product * dimension, 1);
  return new Tensor(
    Float32Array.from({ length: size }, () => random.nextDouble() - 0.5),
    shape,
    requiresGrad,
  );
}

describe('gradient buffers', () => {
  test('a product writes its input gradient without zero-filling it first, with the same bits', () => {
    clearPool();
    const random = new RandomGenerator('gradient-buffers');
    const [m, k, n] = [37, 300, 70];
    const x = randomTensor(random, [m, k], true);
    const first = randomTensor(random, [n, k], false);
    const second = randomTensor(random, [n, k], false);
    // x feeds two products: the first to run backward writes x's gradient, the second adds to it.
    const y = add(matmul(x, first, { transposeB: true }), matmul(x, second, { transposeB: true }));
    const seed = Float32Array.from({ length: m * n }, () => random.nextDouble() - 0.5);
    // Pooled buffers of every size class involved, so that zero-filling one would be counted.
    const primed = [m * n, m * n, m * n, m * k].map((length) => allocate(length));
    for (const buffer of primed) release(buffer);
    const before = memoryStatistics().zeroFilledBytes;
    y.backward(seed);
    const filled = memoryStatistics().zeroFilledBytes - before;
    // Only the seed's gradient and the add's inputs (summed into, not products) are filled.
    assert.equal(filled, 3 * 4 * m * n, 'the product gradient of x was not zero-filled');
    const expected = new Float32Array(m * k);
    for (const weight of [first, second])
      getBackend().matmul({
        a: seed,
        b: weight.data,
        c: expected,
        batch: 1,
        m,
        n: k,
        k: n,
        transposeA: false,
        transposeB: false,
        strideA: 0,
        strideB: 0,
        beta: 1,
      });
    assert.deepEqual(Array.from(x.grad!), Array.from(expected));
  });
});
