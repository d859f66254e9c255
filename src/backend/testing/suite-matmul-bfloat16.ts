import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { roundToBfloat16, widenBfloat16 } from '../bfloat16.js';
import type { KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { allocate, createRandom, randomArray, type RandomGenerator } from './random.js';
import { matmul64 } from './reference64.js';

interface Bfloat16Case {
  m: number;
  n: number;
  k: number;
  transposeB: boolean;
  alpha?: number;
  beta?: number;
}

/** Random bfloat16 weights as a Uint16Array view at a non-zero offset (as kernels get them). */
function randomBfloat16(random: RandomGenerator, length: number): Uint16Array {
  const view = new Uint16Array(length + 5).subarray(3, 3 + length);
  view.set(roundToBfloat16(randomArray(random, length)));
  return view;
}

/** The two kernels with one summation order: B in bfloat16, or B in float32. */
type WeightKind = 'matmulBfloat16' | 'matmulFixedOrder';

/** Random weights for `kind` (at a non-zero offset), and their float32 values. */
function randomWeights(
  random: RandomGenerator,
  length: number,
  kind: WeightKind,
): { b: Uint16Array | Float32Array; values: Float32Array } {
  if (kind === 'matmulFixedOrder') {
    const b = randomArray(random, length);
    return { b, values: b };
  }
  const b = randomBfloat16(random, length);
  return { b, values: widenBfloat16(b) };
}

function multiply(
  backend: KernelBackend,
  kind: WeightKind,
  b: Uint16Array | Float32Array,
  args: Omit<Parameters<KernelBackend['matmulFixedOrder']>[0], 'b'>,
): void {
  if (kind === 'matmulFixedOrder') backend.matmulFixedOrder({ ...args, b: b as Float32Array });
  else backend.matmulBfloat16({ ...args, b: b as Uint16Array });
}

function runCase(
  backend: KernelBackend,
  kind: WeightKind,
  testCase: Bfloat16Case,
  seed: number,
): void {
  const random = createRandom(seed);
  const { m, n, k, transposeB } = testCase;
  const a = randomArray(random, m * k);
  const { b, values } = randomWeights(random, k * n, kind);
  const c = randomArray(random, m * n);
  const alpha = testCase.alpha ?? 1;
  const beta = testCase.beta ?? 0;
  const shape = { batch: 1, m, n, k, transposeA: false, transposeB, strideA: 0, strideB: 0 };
  const expected = matmul64(a, values, c, { ...shape, alpha, beta });
  multiply(backend, kind, b, { a, c, m, n, k, transposeB, alpha, beta });
  // The same float32 accumulation bound as matmul: B's widened values are exact.
  const label = `${kind} ${JSON.stringify(testCase)}`;
  assertClose(c, expected, { relative: 1e-5, relativeToScale: 2e-6 * Math.sqrt(k) }, label);
}

/**
 * The bfloat16-weight product and its float32-weight twin: against a float64 product with the
 * widened weights, on row counts of decoding (1, 3, 5, 16), past the few-row kernel (17) and of
 * prefill (64), with column and depth counts off every block and vector size (and depths below a vector,
 * a LoRA up-projection's); and the property sampled = scored log-probs rest on: a row's result
 * does not depend on how many other rows are multiplied with it.
 */
export function matmulBfloat16Tests(backend: KernelBackend): void {
  for (const kind of ['matmulBfloat16', 'matmulFixedOrder'] as const)
    fixedOrderTests(backend, kind);
}

/**
 * Multiplies `m` rows at once, then every `count`-row run starting at multiples of `step` on
 * its own, and asserts each run's rows equal the same rows of the whole, bit for bit (with
 * alpha and beta, from the same starting C).
 */
function sameBitsInParts(
  backend: KernelBackend,
  kind: WeightKind,
  random: RandomGenerator,
  testCase: Bfloat16Case,
  counts: readonly number[],
  step: number,
): void {
  const { m, n, k, transposeB, alpha = 1, beta = 0 } = testCase;
  const a = randomArray(random, m * k);
  const { b } = randomWeights(random, k * n, kind);
  const start = randomArray(random, m * n);
  const together = start.slice();
  multiply(backend, kind, b, { a, c: together, m, n, k, transposeB, alpha, beta });
  for (const count of counts) {
    for (let first = 0; first + count <= m; first += step) {
      const part = start.slice(first * n, (first + count) * n);
      const rows = a.subarray(first * k, (first + count) * k);
      multiply(backend, kind, b, { a: rows, c: part, m: count, n, k, transposeB, alpha, beta });
      assert.deepEqual(
        Array.from(part),
        Array.from(together.subarray(first * n, (first + count) * n)),
        `rows ${first}..${first + count} of ${JSON.stringify(testCase)}`,
      );
    }
  }
}

function fixedOrderTests(backend: KernelBackend, kind: WeightKind): void {
  describe(kind, () => {
    test('odd shapes and tails, both layouts of B', () => {
      let seed = 100;
      // 200: more rows than one task takes when there are few column blocks (row parts);
      // 23, 24, 25: either side of the B [n×k] path's packed tile, and one row past a panel.
      for (const m of [1, 3, 5, 16, 17, 23, 24, 25, 64, 200]) {
        for (const [n, k] of [
          [1, 1],
          [7, 5],
          [70, 8],
          [70, 19],
          [67, 300],
          [129, 33],
          // With few rows on 2 threads, 3 column tasks of 64 become 4 of 48, the last ragged.
          [150, 37],
          // n % 16 = k % 32 = 0: the AMX tiles on hosts that have them (one and two B tiles).
          [16, 32],
          [48, 96],
        ] as const) {
          for (const transposeB of [false, true])
            runCase(backend, kind, { m, n, k, transposeB }, seed++);
        }
      }
    });

    test('alpha, beta and k = 0', () => {
      let seed = 200;
      for (const transposeB of [false, true]) {
        runCase(backend, kind, { m: 5, n: 70, k: 40, transposeB, alpha: 0.5, beta: 1 }, seed++);
        runCase(backend, kind, { m: 18, n: 9, k: 33, transposeB, alpha: 2, beta: -0.5 }, seed++);
        runCase(backend, kind, { m: 40, n: 67, k: 6, transposeB, alpha: 2, beta: 1 }, seed++);
        runCase(backend, kind, { m: 150, n: 131, k: 20, transposeB, alpha: 2, beta: -0.5 }, seed++);
        runCase(backend, kind, { m: 12, n: 32, k: 64, transposeB, alpha: 0.3, beta: -0.5 }, seed++);
        runCase(backend, kind, { m: 3, n: 4, k: 0, transposeB, beta: 0.25 }, seed++);
      }
    });

    test('beta = 0 overwrites NaN in C', () => {
      const random = createRandom(7);
      const a = randomArray(random, 2 * 20);
      const { b } = randomWeights(random, 20 * 6, kind);
      const c = allocate(2 * 6).fill(Number.NaN);
      multiply(backend, kind, b, { a, c, m: 2, n: 6, k: 20, transposeB: true });
      assert.ok(c.every(Number.isFinite));
    });

    test('a row gives the same bits whatever the number of rows beside it', () => {
      const random = createRandom(300);
      for (const transposeB of [false, true]) {
        for (const [n, k] of [
          [70, 300],
          [129, 576],
          [131, 8],
          [150, 37],
          [176, 576],
        ] as const) {
          // Past 128 rows with few column blocks, the rows are cut between tasks too.
          // 5 and 16: few-row blocks of four and one, and a decode batch (all prefetching);
          // 24 and 30: the packed tile's smallest products.
          sameBitsInParts(
            backend,
            kind,
            random,
            { m: 200, n, k, transposeB },
            [1, 3, 5, 16, 17, 24, 30],
            37,
          );
        }
      }
    });

    test('the same bits with alpha and beta (C added to, as gradients accumulate)', () => {
      const random = createRandom(301);
      for (const transposeB of [false, true]) {
        // alpha 0.3: not a power of two, so a product rounded before the add would show.
        const shape = { m: 100, n: 70, k: 300, transposeB, alpha: 0.3, beta: 1 };
        sameBitsInParts(backend, kind, random, shape, [1, 5, 24, 40], 29);
        sameBitsInParts(backend, kind, random, { ...shape, beta: -0.75 }, [3, 30], 31);
      }
    });

    test('the same bits for every few-row count on a deep product with a tail', () => {
      // Decode batches of 2–16 rows on the dot-product blocks at a depth of several hundred
      // vectors plus a tail (1,100 = 68·16 + 12), beside the same rows one at a time: a
      // block that splits the depth, or shares B rows between its row blocks, must still give
      // each entry its one order, for the ragged last row block too. 44 columns: 11 blocks of 4,
      // none left over, and a second task on 2 threads.
      const random = createRandom(304);
      for (const transposeB of [false, true]) {
        const shape = { m: 48, n: 44, k: 1100, transposeB, alpha: 0.3, beta: 1 };
        sameBitsInParts(backend, kind, random, shape, [1, 2, 7, 12, 16], 13);
      }
    });

    test('the same bits when the rows run as several blocks of packed A', () => {
      // 550 rows of depth 2,100: more than one block of the B [n×k] path's packed A (at least
      // 512 rows a block; too deep to read A in place), the last micro-panel partial, so parts
      // of one product and whole products straddle the seam.
      const random = createRandom(302);
      const shape = { m: 550, n: 40, k: 2100, transposeB: true };
      runCase(backend, kind, shape, 303);
      sameBitsInParts(backend, kind, random, shape, [1, 24, 100], 107);
    });
  });
}
