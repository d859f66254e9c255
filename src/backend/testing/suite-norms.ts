import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { finiteDifferenceGradient, weightedSum } from './finite-difference.js';
import { allocate, createRandom, int32ViewOf, randomArray, viewOf } from './random.js';
import { layerNorm64, rmsNorm64, rope64 } from './reference64.js';

const FORWARD = { relative: 1e-5, absolute: 1e-6 };
const BACKWARD = { relative: 1e-4, absolute: 1e-5 };
const SHAPES = [
  [1, 1],
  [3, 7],
  [5, 256],
  [2, 1031],
];

export function normTests(backend: KernelBackend): void {
  describe('rmsNorm', () => {
    test('forward matches the reference and saves 1/rms', () => {
      const random = createRandom(201);
      for (const [rows, columns] of SHAPES) {
        const input = randomArray(random, rows * columns, 2);
        const weight = randomArray(random, columns);
        const output = allocate(rows * columns);
        const inverseRms = allocate(rows);
        backend.rmsNorm({ input, weight, output, inverseRms, rows, columns, epsilon: 1e-5 });
        assertClose(
          output,
          rmsNorm64(input, weight, rows, columns, 1e-5),
          FORWARD,
          `rmsNorm ${rows}x${columns}`,
        );
        const expectedInverse = Array.from({ length: rows }, (_, r) => {
          const row = input.subarray(r * columns, (r + 1) * columns);
          return 1 / Math.sqrt(weightedSum(row, row) / columns + 1e-5);
        });
        assertClose(inverseRms, expectedInverse, FORWARD, 'inverseRms');
      }
    });

    test('backward matches finite differences for input and weight, and accumulates', () => {
      const random = createRandom(202);
      for (const [rows, columns] of [
        [3, 7],
        [2, 300],
      ]) {
        const input = randomArray(random, rows * columns);
        const weight = randomArray(random, columns);
        const gradOutput = randomArray(random, rows * columns);
        const output = allocate(rows * columns);
        const inverseRms = allocate(rows);
        backend.rmsNorm({ input, weight, output, inverseRms, rows, columns, epsilon: 1e-5 });
        const initialInput = randomArray(random, rows * columns);
        const initialWeight = randomArray(random, columns);
        const gradInput = viewOf(initialInput);
        const gradWeight = viewOf(initialWeight);
        backend.rmsNormBackward({
          input,
          weight,
          inverseRms,
          gradOutput,
          gradInput,
          gradWeight,
          rows,
          columns,
        });
        const byInput = finiteDifferenceGradient(
          (x) => weightedSum(rmsNorm64(x, weight, rows, columns, 1e-5), gradOutput),
          input,
        );
        const byWeight = finiteDifferenceGradient(
          (w) => weightedSum(rmsNorm64(input, w, rows, columns, 1e-5), gradOutput),
          weight,
        );
        assertClose(
          gradInput,
          byInput.map((v, i) => v + initialInput[i]),
          BACKWARD,
          'rmsNorm gradInput',
        );
        assertClose(
          gradWeight,
          byWeight.map((v, i) => v + initialWeight[i]),
          BACKWARD,
          'rmsNorm gradWeight',
        );
        const onlyInput = allocate(rows * columns);
        backend.rmsNormBackward({
          input,
          weight,
          inverseRms,
          gradOutput,
          gradInput: onlyInput,
          gradWeight: null,
          rows,
          columns,
        });
        assertClose(onlyInput, byInput, BACKWARD, 'rmsNorm gradInput without gradWeight');
      }
    });
  });

  describe('addRmsNorm', () => {
    // Decode steps take the fused kernel, scoring with gradients the two ops: their bits must
    // agree on every backend. 40 × 576 rows span two native tasks.
    test("is this backend's add then rmsNorm, bit for bit, on odd shapes and in place", () => {
      const random = createRandom(260);
      for (const [rows, columns] of [...SHAPES, [40, 576]] as const) {
        const input = randomArray(random, rows * columns, 2);
        const residual = randomArray(random, rows * columns, 3);
        const weight = randomArray(random, columns);
        const expectedSum = allocate(rows * columns);
        for (let i = 0; i < expectedSum.length; i++) expectedSum[i] = input[i] + residual[i];
        const expected = allocate(rows * columns);
        const expectedInverse = allocate(rows);
        backend.rmsNorm({
          input: expectedSum,
          weight,
          output: expected,
          inverseRms: expectedInverse,
          rows,
          columns,
          epsilon: 1e-5,
        });
        for (const inPlace of [false, true]) {
          const base = viewOf(input);
          const sum = inPlace ? base : allocate(rows * columns);
          const output = allocate(rows * columns);
          const inverseRms = allocate(rows);
          backend.addRmsNorm({
            input: base,
            residual,
            weight,
            sum,
            output,
            inverseRms,
            rows,
            columns,
            epsilon: 1e-5,
          });
          const label = `${rows}×${columns}${inPlace ? ' in place' : ''}`;
          assert.deepEqual(Array.from(sum), Array.from(expectedSum), `${label} sum`);
          assert.deepEqual(Array.from(output), Array.from(expected), `${label} output`);
          assert.deepEqual(Array.from(inverseRms), Array.from(expectedInverse), label);
        }
      }
    });
  });

  describe('layerNorm', () => {
    test('forward matches the reference with and without bias', () => {
      const random = createRandom(203);
      for (const [rows, columns] of SHAPES) {
        // A large common offset checks that the variance is not computed as E[x²] − E[x]².
        const input = randomArray(random, rows * columns).map((x) => x + 300);
        const weight = randomArray(random, columns);
        const bias = randomArray(random, columns);
        const output = allocate(rows * columns);
        const mean = allocate(rows);
        const inverseStd = allocate(rows);
        for (const withBias of [bias, null]) {
          backend.layerNorm({
            input,
            weight,
            bias: withBias,
            output,
            mean,
            inverseStd,
            rows,
            columns,
            epsilon: 1e-5,
          });
          const expected = layerNorm64(input, weight, withBias, rows, columns, 1e-5);
          assertClose(
            output,
            expected,
            { relative: 1e-4, absolute: 1e-4 },
            `layerNorm ${rows}x${columns}`,
          );
        }
      }
    });

    test('backward matches finite differences for input, weight and bias', () => {
      const random = createRandom(204);
      for (const [rows, columns] of [
        [3, 7],
        [2, 300],
      ]) {
        const input = randomArray(random, rows * columns);
        const weight = randomArray(random, columns);
        const bias = randomArray(random, columns);
        const gradOutput = randomArray(random, rows * columns);
        const state = {
          output: allocate(rows * columns),
          mean: allocate(rows),
          inverseStd: allocate(rows),
        };
        backend.layerNorm({ input, weight, bias, ...state, rows, columns, epsilon: 1e-5 });
        const gradInput = allocate(rows * columns).fill(1);
        const gradWeight = allocate(columns).fill(-1);
        const gradBias = allocate(columns).fill(2);
        const { mean, inverseStd } = state;
        backend.layerNormBackward({
          input,
          weight,
          mean,
          inverseStd,
          gradOutput,
          gradInput,
          gradWeight,
          gradBias,
          rows,
          columns,
        });
        const forward = (
          x: ArrayLike<number>,
          w: ArrayLike<number>,
          b: ArrayLike<number>,
        ): number => weightedSum(layerNorm64(x, w, b, rows, columns, 1e-5), gradOutput);
        const byInput = finiteDifferenceGradient((x) => forward(x, weight, bias), input);
        const byWeight = finiteDifferenceGradient((w) => forward(input, w, bias), weight);
        const byBias = finiteDifferenceGradient((b) => forward(input, weight, b), bias);
        assertClose(
          gradInput,
          byInput.map((v) => v + 1),
          BACKWARD,
          'layerNorm gradInput',
        );
        assertClose(
          gradWeight,
          byWeight.map((v) => v - 1),
          BACKWARD,
          'layerNorm gradWeight',
        );
        assertClose(
          gradBias,
          byBias.map((v) => v + 2),
          BACKWARD,
          'layerNorm gradBias',
        );
        const onlyInput = allocate(rows * columns);
        backend.layerNormBackward({
          input,
          weight,
          mean,
          inverseStd,
          gradOutput,
          gradInput: onlyInput,
          gradWeight: null,
          gradBias: null,
          rows,
          columns,
        });
        assertClose(onlyInput, byInput, BACKWARD, 'layerNorm gradInput alone');
      }
    });
  });

  describe('rope', () => {
    test('known values: position 0 is the identity, position 1 rotates pair i by θ^(−2i/D)', () => {
      const data = viewOf([1, 2, 3, 4, 1, 2, 3, 4]);
      backend.rope({
        data,
        source: data,
        positions: int32ViewOf([0, 1]),
        batch: 1,
        length: 2,
        heads: 1,
        headDim: 4,
        theta: 10000,
        inverse: false,
      });
      assertClose(data.subarray(0, 4), [1, 2, 3, 4], FORWARD, 'position 0');
      // Pair (0, 2) turns by 1 radian, pair (1, 3) by 10000^(−1/2) = 0.01 radian.
      const expected = [
        Math.cos(1) - 3 * Math.sin(1),
        2 * Math.cos(0.01) - 4 * Math.sin(0.01),
        3 * Math.cos(1) + Math.sin(1),
        4 * Math.cos(0.01) + 2 * Math.sin(0.01),
      ];
      assertClose(data.subarray(4), expected, FORWARD, 'position 1');
    });

    test('matches the reference, and the inverse rotation undoes it', () => {
      const random = createRandom(205);
      const shape = { batch: 2, length: 5, heads: 3, headDim: 64, theta: 500000 };
      const count = shape.batch * shape.length * shape.heads * shape.headDim;
      const original = randomArray(random, count);
      const positions = int32ViewOf([0, 1, 2, 3, 4, 7, 100, 2047, 9, 31]);
      const data = viewOf(original);
      backend.rope({ data, source: data, positions, ...shape, inverse: false });
      assertClose(data, rope64(original, positions, shape, false), FORWARD, 'rope forward');
      backend.rope({ data, source: data, positions, ...shape, inverse: true });
      assertClose(data, original, FORWARD, 'inverse ∘ rope');
      const rotatedBack = viewOf(original);
      backend.rope({ data: rotatedBack, source: rotatedBack, positions, ...shape, inverse: true });
      assertClose(rotatedBack, rope64(original, positions, shape, true), FORWARD, 'rope inverse');
    });

    test('from another array gives the bits of in place and leaves the source as it was', () => {
      const random = createRandom(206);
      // Odd shapes: 7 tokens, 5 heads, a head dimension that is no multiple of a vector.
      for (const headDim of [2, 6, 18, 64]) {
        const shape = { batch: 1, length: 7, heads: 5, headDim, theta: 10000 };
        const count = shape.length * shape.heads * headDim;
        const original = randomArray(random, count);
        const positions = int32ViewOf([0, 3, 1, 8, 2, 70000, 5]);
        for (const inverse of [false, true]) {
          const inPlace = viewOf(original);
          backend.rope({ data: inPlace, source: inPlace, positions, ...shape, inverse });
          const source = viewOf(original);
          const target = allocate(count).fill(Number.NaN);
          backend.rope({ data: target, source, positions, ...shape, inverse });
          assert.deepEqual(target, inPlace, `headDim ${headDim}, inverse ${inverse}`);
          assert.deepEqual(source, viewOf(original), 'the source is untouched');
        }
      }
    });
  });
}
