import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { add, noGrad, rmsNorm, tidy, Tensor } from './index.js';
import { addRmsNorm } from './ops/residual-norm.js';
import { checkGradients, forEachBackend, randomLeaf } from './test-support/gradient-check.js';

test('addRmsNorm: one kernel without a graph, add and rmsNorm with one, the same bits', () => {
  const random = new RandomGenerator(40);
  forEachBackend((backend) => {
    for (const shape of [
      [1, 1, 576],
      [3, 5, 37],
      [2, 9],
    ]) {
      const input = randomLeaf(shape, random, 2);
      const residual = randomLeaf(shape, random);
      const weight = randomLeaf([shape[shape.length - 1]!], random);
      const recorded = tidy(() => {
        const { sum, normed } = addRmsNorm(input, residual, weight, 1e-5);
        assert.ok(normed.gradientNode, 'records the graph when inputs require grad');
        return { sum: sum.toArray(), normed: normed.toArray() };
      });
      const fused = noGrad(() =>
        tidy(() => {
          const { sum, normed } = addRmsNorm(input, residual, weight, 1e-5);
          return { sum: sum.toArray(), normed: normed.toArray() };
        }),
      );
      const label = `${backend} [${shape.join(', ')}]`;
      assert.deepEqual(fused.sum, recorded.sum, label);
      assert.deepEqual(fused.normed, recorded.normed, label);
      const composed = noGrad(() => rmsNorm(add(input, residual), weight, 1e-5).toArray());
      assert.deepEqual(fused.normed, composed, label);
    }
    checkGradients({
      inputs: [
        randomLeaf([2, 3, 8], random),
        randomLeaf([2, 3, 8], random),
        randomLeaf([8], random),
      ],
      fn: ([x, residual, weight]) => addRmsNorm(x!, residual!, weight!, 1e-5).normed,
      random,
    });
  });
});

test('addRmsNorm broadcasts a residual it cannot fuse, as add does', () => {
  const input = new Tensor(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
  const residual = new Tensor(new Float32Array([1, 1, 1]), [3]);
  const weight = new Tensor(new Float32Array([1, 1, 1]), [3]);
  const { sum } = noGrad(() => addRmsNorm(input, residual, weight, 1e-5));
  assert.deepEqual(sum.toArray(), [2, 3, 4, 5, 6, 7]);
});
