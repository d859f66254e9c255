import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { ShapeError } from '../util/errors.js';
import {
  abs,
  add,
  clamp,
  concat,
  divide,
  exp,
  log,
  matmul,
  max,
  maximum,
  mean,
  minimum,
  multiply,
  reshape,
  sigmoid,
  silu,
  slice,
  sqrt,
  square,
  subtract,
  sum,
  tanh,
  tensor,
  transpose,
  where,
  Tensor,
  negate,
  scale,
  addScaled,
} from './index.js';
import { checkGradients, forEachBackend, randomLeaf } from './test-support/gradient-check.js';

describe('element-wise ops', () => {
  test('broadcasting forward values', () => {
    const a = tensor([1, 2, 3, 4, 5, 6], [2, 3]);
    assert.deepEqual(add(a, tensor([10, 20, 30])).toArray(), [11, 22, 33, 14, 25, 36]);
    assert.deepEqual(multiply(a, tensor([2, 3], [2, 1])).toArray(), [2, 4, 6, 12, 15, 18]);
    assert.deepEqual(subtract(a, 1).toArray(), [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(add(tensor([1, 2], [2, 1]), tensor([10, 20, 30], [1, 3])).shape, [2, 3]);
    assert.throws(() => add(a, tensor([1, 2])), ShapeError);
  });

  test('a row added under every row (a bias) gives the bits of the broadcasting rule', () => {
    forEachBackend((backendName) => {
      const random = new RandomGenerator(5);
      const input = randomLeaf([3, 5, 7], random);
      const row = randomLeaf([7], random);
      const weights = randomLeaf([3, 5, 7], random);
      const run = (combine: (input: Tensor, row: Tensor) => Tensor) => {
        const leaves = [input, row].map((leaf) => new Tensor(leaf.data.slice(), leaf.shape, true));
        const output = combine(leaves[0]!, leaves[1]!);
        sum(multiply(output, weights)).backward();
        return [output.data, leaves[0]!.grad!, leaves[1]!.grad!];
      };
      // x − (−b) runs the broadcasting loop and rounds exactly as x + b, gradients too.
      const viaRow = run((x, b) => add(x, b));
      const viaBroadcast = run((x, b) => subtract(x, negate(b)));
      for (const [index, values] of viaRow.entries())
        assert.deepEqual(values, viaBroadcast[index], `${backendName}: output, ∂input, ∂row`);
    });
  });

  test('binary gradients with broadcasting match finite differences', () => {
    const random = new RandomGenerator(1);
    for (const [left, right] of [
      [[2, 3], [3]],
      [
        [2, 1, 4],
        [3, 1],
      ],
      [[3], []],
      [
        [2, 3],
        [2, 3],
      ],
    ] as const) {
      for (const op of [add, subtract, multiply, maximum, minimum]) {
        checkGradients({
          inputs: [randomLeaf([...left], random), randomLeaf([...right], random)],
          fn: ([a, b]) => op(a!, b!),
          random,
        });
      }
      const positive = randomLeaf([...right], random);
      positive.data.forEach((value, index) => (positive.data[index] = 1 + Math.abs(value)));
      checkGradients({
        inputs: [randomLeaf([...left], random), positive],
        fn: ([a, b]) => divide(a!, b!),
        random,
      });
    }
  });

  test('unary gradients match finite differences', () => {
    const random = new RandomGenerator(2);
    for (const op of [exp, tanh, sigmoid, silu, negate, square, (x: Tensor) => scale(x, -2.5)]) {
      checkGradients({ inputs: [randomLeaf([3, 5], random)], fn: ([x]) => op(x!), random });
    }
    const positive = randomLeaf([7], random);
    positive.data.forEach((value, index) => (positive.data[index] = 0.5 + Math.abs(value)));
    for (const op of [log, sqrt, abs])
      checkGradients({ inputs: [positive], fn: ([x]) => op(x!), random });
  });

  test("addScaled: add(a, scale(b, s))'s bits on every backend, gradients, one shape only", () => {
    const random = new RandomGenerator(3);
    forEachBackend((backend) => {
      const a = randomLeaf([3, 37], random);
      const b = randomLeaf([3, 37], random);
      const s = 16 / Math.sqrt(8);
      const expected = add(a, scale(b, s)).toArray();
      assert.deepEqual(addScaled(a, b, s).toArray(), expected, backend);
      checkGradients({ inputs: [a, b], fn: ([x, y]) => addScaled(x!, y!, -2.5), random });
    });
    assert.throws(() => addScaled(tensor([1, 2]), tensor([1, 2], [2, 1]), 2), ShapeError);
  });

  test('clamp and where route gradients', () => {
    const x = new Tensor(new Float32Array([-2, -0.5, 0.5, 2]), [4], true);
    const clamped = clamp(x, -1, 1);
    assert.deepEqual(clamped.toArray(), [-1, -0.5, 0.5, 1]);
    clamped.backward(new Float32Array([1, 1, 1, 1]));
    assert.deepEqual(Array.from(x.grad!), [0, 1, 1, 0]);
    const a = new Tensor(new Float32Array([1, 2, 3]), [3], true);
    const b = new Tensor(new Float32Array([10]), [1], true);
    const chosen = where(tensor([1, 0, 1]), a, b);
    assert.deepEqual(chosen.toArray(), [1, 10, 3]);
    chosen.backward(new Float32Array([1, 2, 3]));
    assert.deepEqual(Array.from(a.grad!), [1, 0, 3]);
    assert.deepEqual(Array.from(b.grad!), [2]);
  });

  test('NaN propagates through arithmetic and maximum', () => {
    assert.ok(Number.isNaN(add(tensor([NaN]), tensor([1])).item()));
    assert.ok(Number.isNaN(maximum(tensor([NaN]), tensor([1])).item()));
    assert.ok(Number.isNaN(max(tensor([1, NaN, 3])).item()));
  });
});

describe('reductions and shapes', () => {
  test('sum, mean, max values and gradients', () => {
    const x = tensor([1, 5, 3, 4, 2, 6], [2, 3]);
    assert.deepEqual(sum(x, 1).toArray(), [9, 12]);
    assert.deepEqual(mean(x, 0).toArray(), [2.5, 3.5, 4.5]);
    assert.deepEqual(max(x, -1, true).shape, [2, 1]);
    assert.deepEqual(max(x, 1).toArray(), [5, 6]);
    assert.equal(sum(x).item(), 21);
    const random = new RandomGenerator(3);
    for (const axis of [0, 1, 2, undefined]) {
      for (const op of [sum, mean, max])
        checkGradients({
          inputs: [randomLeaf([2, 3, 4], random)],
          fn: ([v]) => op(v!, axis),
          random,
        });
    }
    assert.throws(() => sum(x, 2), /out of range/);
  });

  test('reshape, transpose, slice, concat', () => {
    const x = tensor([0, 1, 2, 3, 4, 5], [2, 3]);
    assert.deepEqual(transpose(x).toArray(), [0, 3, 1, 4, 2, 5]);
    assert.deepEqual(reshape(x, [3, -1]).shape, [3, 2]);
    assert.deepEqual(slice(x, 1, 1, 3).toArray(), [1, 2, 4, 5]);
    assert.deepEqual(concat([x, tensor([9, 9], [2, 1])], 1).toArray(), [0, 1, 2, 9, 3, 4, 5, 9]);
    assert.throws(() => reshape(x, [4, 2]), ShapeError);
    assert.throws(() => slice(x, 1, 2, 5), ShapeError);
    const random = new RandomGenerator(4);
    checkGradients({
      inputs: [randomLeaf([2, 3, 4], random)],
      fn: ([v]) => transpose(v!, [2, 0, 1]),
      random,
    });
    checkGradients({
      inputs: [randomLeaf([2, 3, 4], random)],
      fn: ([v]) => slice(v!, 2, 1, 3),
      random,
    });
    checkGradients({
      inputs: [randomLeaf([2, 3], random), randomLeaf([2, 2], random)],
      fn: ([a, b]) => concat([a!, b!], 1),
      random,
    });
  });
});

describe('matmul on every backend', () => {
  test('all transpose combinations, batched and shared, against a float64 reference', () => {
    forEachBackend((backendName) => {
      const random = new RandomGenerator(5);
      for (const transposeA of [false, true]) {
        for (const transposeB of [false, true]) {
          for (const shared of [false, true]) {
            const [m, k, n, batch] = [3, 5, 4, 2];
            const a = randomLeaf(transposeA ? [batch, k, m] : [batch, m, k], random);
            const b = randomLeaf(
              shared ? (transposeB ? [n, k] : [k, n]) : transposeB ? [batch, n, k] : [batch, k, n],
              random,
            );
            const product = matmul(a, b, { transposeA, transposeB });
            assert.deepEqual(product.shape, [batch, m, n]);
            for (let batchIndex = 0; batchIndex < batch; batchIndex++) {
              for (let i = 0; i < m; i++) {
                for (let j = 0; j < n; j++) {
                  let expected = 0;
                  for (let l = 0; l < k; l++) {
                    const av = a.data[batchIndex * m * k + (transposeA ? l * m + i : i * k + l)]!;
                    const bOffset = shared ? 0 : batchIndex * k * n;
                    const bv = b.data[bOffset + (transposeB ? j * k + l : l * n + j)]!;
                    expected += av * bv;
                  }
                  assert.ok(
                    Math.abs(product.data[(batchIndex * m + i) * n + j]! - expected) < 1e-5,
                    `${backendName} ${transposeA}/${transposeB}/${shared}`,
                  );
                }
              }
            }
            checkGradients({
              inputs: [a, b],
              fn: ([x, y]) => matmul(x!, y!, { transposeA, transposeB }),
              random,
            });
          }
        }
      }
      assert.throws(
        () => matmul(tensor([1, 2, 3, 4, 5, 6], [2, 3]), tensor([1, 2, 3, 4], [2, 2])),
        /inner dimensions/,
      );
    });
  });
  test('fixedOrder: the same values, gradients to both operands, and rows independent of M', () => {
    forEachBackend((backendName) => {
      const random = new RandomGenerator(6);
      // Depths below and above a vector (a LoRA factor's rank, a hidden size).
      for (const [k, n] of [
        [3, 20],
        [21, 5],
      ] as const) {
        for (const transposeB of [false, true]) {
          const a = randomLeaf([2, 7, k], random);
          const b = randomLeaf(transposeB ? [n, k] : [k, n], random);
          const fixed = matmul(a, b, { transposeB, fixedOrder: true });
          const ordinary = matmul(a, b, { transposeB });
          assert.deepEqual(fixed.shape, ordinary.shape);
          fixed.data.forEach((value, index) =>
            assert.ok(Math.abs(value - ordinary.data[index]!) < 1e-5, `${backendName} ${index}`),
          );
          const row = matmul(tensor(Array.from(a.data.subarray(3 * k, 4 * k)), [1, k]), b, {
            transposeB,
            fixedOrder: true,
          });
          assert.deepEqual(Array.from(row.data), Array.from(fixed.data.subarray(3 * n, 4 * n)));
          checkGradients({
            inputs: [a, b],
            fn: ([x, y]) => matmul(x!, y!, { transposeB, fixedOrder: true }),
            random,
          });
        }
      }
    });
  });
});
