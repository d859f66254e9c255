import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { getBackend } from '../backend/index.js';
import { RandomGenerator } from '../util/random.js';
import { allocate, clearPool, memoryStatistics, release } from './memory.js';
import { matmul } from './ops/matmul.js';
import { add } from './ops/elementwise.js';
import { swiglu } from './ops/activation.js';
import { crossEntropy } from './ops/scoring.js';
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
  test('products write their input gradient without zero-filling it first, with the same bits', () => {
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
    // Only the seed's gradient is filled (backward adds the seed to it); the add and the two
    // products write theirs.
    assert.equal(filled, 4 * m * n, 'the gradients of the add and of x were not zero-filled');
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

  test('SwiGLU, residual adds and the cross-entropy write their input gradients unfilled', () => {
    clearPool();
    const random = new RandomGenerator('gradient-writes');
    const [m, k, n, vocab] = [40, 64, 96, 300];
    const x = randomTensor(random, [m, k], true);
    const weight = (rows: number, columns: number) => randomTensor(random, [rows, columns], false);
    const [gate, up, skip, head] = [weight(n, k), weight(n, k), weight(n, k), weight(vocab, n)];
    const mlp = swiglu(matmul(x, gate, { transposeB: true }), matmul(x, up, { transposeB: true }));
    const hidden = add(mlp, matmul(x, skip, { transposeB: true }));
    const targets = Int32Array.from({ length: m }, () => random.nextInt(vocab));
    const loss = crossEntropy(matmul(hidden, head, { transposeB: true }), targets);
    // Pooled buffers of every size class in the graph, so that a zero-fill would be counted.
    const primed = [m * vocab, m * n, m * n, m * n, m * n, m * k].map((length) => allocate(length));
    for (const buffer of primed) release(buffer);
    const before = memoryStatistics().zeroFilledBytes;
    loss.backward();
    assert.equal(memoryStatistics().zeroFilledBytes - before, 0, 'no gradient was zero-filled');
    assert.ok(x.grad!.every(Number.isFinite));
  });
});
