import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { allocate, createRandom, randomArray, viewOf } from './random.js';
import { gelu64, swiglu64 } from './reference64.js';

const FORWARD = { relative: 1e-5, absolute: 1e-6 };
const BACKWARD = { relative: 1e-4, absolute: 1e-5 };
const LENGTHS = [1, 7, 1000, 40_001];
const STEP = 1e-6;

/** Random values plus the awkward ones: large of both signs and zero. */
function awkwardValues(length: number, seed: number): Float32Array {
  const values = randomArray(createRandom(seed), length, 3);
  const extremes = [0, 30, -30, 100, -100, 1e4, -1e4];
  for (let i = 0; i < Math.min(extremes.length, length); i++)
    values[(i * 7) % length] = extremes[i];
  return values;
}

export function elementwiseTests(backend: KernelBackend): void {
  describe('swiglu', () => {
    test('forward and backward match the reference and central differences', () => {
      LENGTHS.forEach((length, index) => {
        const gate = awkwardValues(length, 600 + index);
        const up = randomArray(createRandom(610 + index), length);
        const output = allocate(length);
        backend.swiglu({ gate, up, output });
        assertClose(
          output,
          Array.from(gate, (g, i) => swiglu64(g, up[i])),
          FORWARD,
          `swiglu ${length}`,
        );
        const gradOutput = randomArray(createRandom(620 + index), length);
        const gradGate = allocate(length).fill(1);
        const gradUp = allocate(length).fill(-1);
        backend.swigluBackward({ gate, up, gradOutput, gradGate, gradUp });
        const expectedGate = Array.from(gate, (g, i) => {
          const slope = (swiglu64(g + STEP, up[i]) - swiglu64(g - STEP, up[i])) / (2 * STEP);
          return 1 + gradOutput[i] * slope;
        });
        const expectedUp = Array.from(gate, (g, i) => -1 + gradOutput[i] * swiglu64(g, 1));
        assertClose(gradGate, expectedGate, BACKWARD, `swiglu gradGate ${length}`);
        assertClose(gradUp, expectedUp, BACKWARD, `swiglu gradUp ${length}`);
      });
    });

    test('NaN propagates', () => {
      const output = allocate(2);
      backend.swiglu({ gate: viewOf([NaN, 1]), up: viewOf([1, NaN]), output });
      assert.ok(output.every(Number.isNaN));
    });
  });

  describe('gelu', () => {
    test('forward and backward match the reference and central differences', () => {
      LENGTHS.forEach((length, index) => {
        const input = awkwardValues(length, 700 + index);
        const output = allocate(length);
        backend.gelu({ input, output });
        assertClose(output, Array.from(input, gelu64), FORWARD, `gelu ${length}`);
        const gradOutput = randomArray(createRandom(710 + index), length);
        const gradInput = allocate(length).fill(0.5);
        backend.geluBackward({ input, gradOutput, gradInput });
        const expected = Array.from(
          input,
          (x, i) => 0.5 + (gradOutput[i] * (gelu64(x + STEP) - gelu64(x - STEP))) / (2 * STEP),
        );
        assertClose(gradInput, expected, BACKWARD, `gelu backward ${length}`);
      });
    });

    test('NaN propagates and huge inputs stay finite', () => {
      const output = allocate(3);
      backend.gelu({ input: viewOf([NaN, 3e38, -3e38]), output });
      assert.ok(Number.isNaN(output[0]));
      assert.deepEqual(Array.from(output.subarray(1)), [Math.fround(3e38), -0]);
      const gradInput = allocate(3);
      backend.geluBackward({
        input: viewOf([NaN, 3e38, -3e38]),
        gradOutput: viewOf([1, 1, 1]),
        gradInput,
      });
      assert.ok(Number.isNaN(gradInput[0]));
      assert.deepEqual(Array.from(gradInput.subarray(1)), [1, 0]);
    });
  });

  describe('adamw', () => {
    test('one step matches the hand-computed update', () => {
      // m = 0.1·0.5 = 0.05, v = 0.001·0.25; bias-corrected m̂ = 0.5, v̂ = 0.25;
      // p = 1·(1 − 0.1·0.01) − 0.1·0.5/(0.5 + 1e-8) = 0.899.
      const state = {
        parameter: viewOf([1, -2]),
        gradient: viewOf([0.5, 0]),
        firstMoment: viewOf([0, 0]),
        secondMoment: viewOf([0, 0]),
      };
      backend.adamw({
        ...state,
        learningRate: 0.1,
        beta1: 0.9,
        beta2: 0.999,
        epsilon: 1e-8,
        weightDecay: 0.01,
        step: 1,
      });
      assertClose(state.parameter, [0.899, -2 * 0.999], FORWARD, 'parameter');
      assertClose(state.firstMoment, [0.05, 0], FORWARD, 'first moment');
      assertClose(state.secondMoment, [0.00025, 0], FORWARD, 'second moment');
    });

    test('later steps and gradient scaling follow the formula on many parameters', () => {
      const random = createRandom(800);
      const length = 10_007;
      const parameter = randomArray(random, length);
      const gradient = randomArray(random, length);
      const firstMoment = randomArray(random, length, 0.1);
      const secondMoment = randomArray(random, length, 0.1).map(Math.abs);
      const settings = {
        learningRate: 3e-3,
        beta1: 0.8,
        beta2: 0.95,
        epsilon: 1e-6,
        weightDecay: 0.1,
        step: 5,
        gradientScale: 0.25,
      };
      const expected = Array.from(parameter, (p, i) => {
        const g = gradient[i] * settings.gradientScale;
        const m = settings.beta1 * firstMoment[i] + (1 - settings.beta1) * g;
        const v = settings.beta2 * secondMoment[i] + (1 - settings.beta2) * g * g;
        const mHat = m / (1 - settings.beta1 ** settings.step);
        const vHat = v / (1 - settings.beta2 ** settings.step);
        return (
          p * (1 - settings.learningRate * settings.weightDecay) -
          (settings.learningRate * mHat) / (Math.sqrt(vHat) + settings.epsilon)
        );
      });
      backend.adamw({ parameter, gradient, firstMoment, secondMoment, ...settings });
      assertClose(parameter, expected, FORWARD, 'parameter');
    });
  });

  describe('sumOfSquares and axpy', () => {
    test('sumOfSquares accumulates in float64', () => {
      for (const length of [1, 7, 100_003]) {
        const values = randomArray(createRandom(length), length);
        let expected = 0;
        for (const x of values) expected += x * x;
        assertClose(
          [backend.sumOfSquares({ input: values })],
          [expected],
          { relative: 1e-12 },
          `sumOfSquares ${length}`,
        );
      }
      // 2²⁴ + 1 ones: a float32 accumulator would stop at 2²⁴.
      assert.equal(
        backend.sumOfSquares({ input: new Float32Array(2 ** 24 + 1).fill(1) }),
        2 ** 24 + 1,
      );
    });

    test('axpy adds alpha·x into y', () => {
      for (const length of [1, 13, 50_001]) {
        const random = createRandom(900 + length);
        const x = randomArray(random, length);
        const y = randomArray(random, length);
        const expected = Array.from(y, (value, i) => value + -0.75 * x[i]);
        backend.axpy({ alpha: -0.75, x, y });
        assertClose(y, expected, FORWARD, `axpy ${length}`);
      }
    });
  });

  describe('addScaled', () => {
    // rsLoRA's alpha/√rank: not a float32, so fround(scale·b) differs from float32(scale)·b.
    const scales = [16 / Math.sqrt(8), 1, -0.3];
    // Past one 4·32768-element task, so the split across threads is exercised.
    const lengths = [1, 7, 1000, 131_073, 40_001];

    /** The definition, written out: the product rounded to float32, then the float32 sum. */
    const definition = (a: Float32Array, b: Float32Array, scale: number) =>
      Array.from(a, (value, i) => Math.fround(value + Math.fround(scale * b[i])));

    test('a + fround(scale·b), bit for bit, on odd lengths and tails', () => {
      lengths.forEach((length, index) => {
        for (const scale of scales) {
          const random = createRandom(950 + index);
          const a = awkwardValues(length, 960 + index);
          const b = randomArray(random, length, 3);
          const output = allocate(length);
          backend.addScaled({ a, b, scale, output });
          assert.deepEqual(Array.from(output), definition(a, b, scale), `${length} × ${scale}`);
        }
      });
    });

    test('the product is rounded before the sum (no fused multiply-add)', () => {
      // Where one rounding of a + scale·b (what an FMA gives) differs from two, the kernel
      // must give two: the data has such entries, so a fused kernel fails this test.
      const length = 4096;
      const scale = scales[0]!;
      const a = randomArray(createRandom(970), length);
      const b = randomArray(createRandom(971), length);
      const fused = Array.from(a, (value, i) => Math.fround(value + scale * b[i]));
      const expected = definition(a, b, scale);
      assert.ok(expected.some((value, i) => value !== fused[i]));
      const output = allocate(length);
      backend.addScaled({ a, b, scale, output });
      assert.deepEqual(Array.from(output), expected);
    });

    test('in place, signed zeros, infinities and NaN', () => {
      const a = viewOf([-0, -0, Infinity, 1, NaN, 3e38]);
      const b = viewOf([0, -0, -1, Infinity, 1, 3e38]);
      const expected = definition(a, b, 2);
      backend.addScaled({ a, b, scale: 2, output: a });
      assert.deepEqual(Array.from(a), expected);
      assert.ok(Object.is(a[0], 0) && Object.is(a[1], -0));
      assert.deepEqual(Array.from(a.subarray(2)), [Infinity, Infinity, NaN, Infinity]);
    });
  });
}
