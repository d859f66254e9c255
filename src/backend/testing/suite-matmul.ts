import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { allocate, createRandom, randomArray } from './random.js';
import { matmul64 } from './reference64.js';

interface MatmulCase {
  batch: number;
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  /** Broadcast A or B across the batch (stride 0). */
  sharedA?: boolean;
  sharedB?: boolean;
  alpha?: number;
  beta?: number;
}

function runCase(backend: KernelBackend, testCase: MatmulCase, seed: number): void {
  const random = createRandom(seed);
  const { batch, m, n, k, transposeA, transposeB } = testCase;
  const strideA = testCase.sharedA ? 0 : m * k;
  const strideB = testCase.sharedB ? 0 : k * n;
  const a = randomArray(random, testCase.sharedA ? m * k : batch * m * k);
  const b = randomArray(random, testCase.sharedB ? k * n : batch * k * n);
  const c = randomArray(random, batch * m * n);
  const alpha = testCase.alpha ?? 1;
  const beta = testCase.beta ?? 0;
  const expected = matmul64(a, b, c, { ...testCase, strideA, strideB, alpha, beta });
  backend.matmul({
    a,
    b,
    c,
    batch,
    m,
    n,
    k,
    transposeA,
    transposeB,
    strideA,
    strideB,
    alpha,
    beta,
  });
  const label = `matmul ${JSON.stringify(testCase)}`;
  // Float32 accumulation over k terms: the error scales with √k times the result's size.
  assertClose(c, expected, { relative: 1e-5, relativeToScale: 2e-6 * Math.sqrt(k) }, label);
}

export function matmulTests(backend: KernelBackend): void {
  describe('matmul', () => {
    test('every transpose combination on awkward sizes', () => {
      const sizes = [
        [1, 1, 1],
        [3, 5, 7],
        [17, 33, 65],
        [64, 1, 129],
        [1, 70, 19],
        [130, 67, 3],
        // Decode-sized products (native: dot-product kernel up to 16 rows): row counts off the
        // 4-row block, column counts off the 4-column block, depths with a vector tail.
        [13, 70, 300],
        [16, 37, 64],
        [6, 9, 17],
        // Few columns, many rows (a LoRA up-projection's weight gradient: with A transposed,
        // native takes the transposed product).
        [70, 8, 212],
      ];
      let seed = 1;
      for (const [m, n, k] of sizes) {
        for (const transposeA of [false, true]) {
          for (const transposeB of [false, true]) {
            runCase(backend, { batch: 1, m, n, k, transposeA, transposeB }, seed++);
          }
        }
      }
    });

    test('few rows: every row count to 16 with every column tail of a vector', () => {
      // Native: up to 16 rows are the skinny kernels, whose register blocks are 8 (AVX-512)
      // or 4 rows by one or two vectors of 16 or 8 columns; these sizes leave every remainder
      // of rows and columns, and a depth with a vector tail.
      let seed = 1000;
      for (let m = 1; m <= 16; m++)
        for (const n of [1, 3, 7, 8, 9, 15, 16, 17, 31, 33])
          for (const transposeB of [false, true])
            runCase(
              backend,
              { batch: 1, m, n, k: 19, transposeA: m % 2 === 0, transposeB },
              seed++,
            );
    });

    test('sizes past every block size, with transposes', () => {
      runCase(
        backend,
        { batch: 1, m: 263, n: 521, k: 300, transposeA: false, transposeB: false },
        11,
      );
      runCase(backend, { batch: 1, m: 200, n: 97, k: 513, transposeA: true, transposeB: true }, 12);
      runCase(
        backend,
        { batch: 1, m: 129, n: 300, k: 260, transposeA: false, transposeB: true },
        13,
      );
      // A long k with many rows takes the native backend's other large-product kernel (packed);
      // with rollout-sized row counts (up to 256) the column-panel kernel at any depth.
      runCase(
        backend,
        { batch: 1, m: 300, n: 70, k: 1030, transposeA: false, transposeB: true },
        14,
      );
      for (const transposeB of [false, true]) {
        runCase(backend, { batch: 1, m: 40, n: 70, k: 1030, transposeA: false, transposeB }, 15);
        runCase(backend, { batch: 1, m: 256, n: 33, k: 1537, transposeA: false, transposeB }, 16);
      }
    });

    test('batches, with A or B shared across the batch (stride 0)', () => {
      runCase(backend, { batch: 3, m: 5, n: 9, k: 4, transposeA: false, transposeB: false }, 21);
      runCase(
        backend,
        { batch: 4, m: 7, n: 6, k: 11, transposeA: true, transposeB: false, sharedA: true },
        22,
      );
      runCase(
        backend,
        { batch: 2, m: 33, n: 17, k: 8, transposeA: false, transposeB: true, sharedB: true },
        23,
      );
    });

    test('alpha and beta scale the product and the previous C', () => {
      runCase(
        backend,
        { batch: 1, m: 9, n: 13, k: 6, transposeA: false, transposeB: false, alpha: 0.5, beta: 1 },
        31,
      );
      runCase(
        backend,
        { batch: 2, m: 4, n: 70, k: 33, transposeA: true, transposeB: true, alpha: -2, beta: 0.25 },
        32,
      );
      runCase(
        backend,
        { batch: 1, m: 65, n: 65, k: 65, transposeA: false, transposeB: true, alpha: 1, beta: 1 },
        33,
      );
      runCase(
        backend,
        { batch: 1, m: 100, n: 8, k: 33, transposeA: true, transposeB: false, alpha: 2, beta: 0.5 },
        35,
      );
      runCase(
        backend,
        {
          batch: 1,
          m: 11,
          n: 45,
          k: 70,
          transposeA: false,
          transposeB: true,
          alpha: 3,
          beta: -0.5,
        },
        34,
      );
    });

    test('beta = 0 overwrites C, even where C held NaN', () => {
      // 2 rows, and 64 rows of 2 columns with A transposed (native: the transposed
      // few-column product; A is all ones, so its layout does not change the product).
      for (const m of [2, 64]) {
        const a = allocate(3 * m).fill(1);
        const b = allocate(6).fill(2);
        const c = allocate(2 * m).fill(NaN);
        backend.matmul({
          a,
          b,
          c,
          batch: 1,
          m,
          n: 2,
          k: 3,
          transposeA: m > 2,
          transposeB: false,
          strideA: 0,
          strideB: 0,
        });
        assert.deepEqual(Array.from(c), new Array<number>(2 * m).fill(6));
      }
    });

    test('NaN and infinity in the inputs propagate', () => {
      const a = allocate(4);
      a.set([1, NaN, Infinity, 1]);
      const b = allocate(4);
      b.set([1, 0, 0, 1]);
      const c = allocate(4);
      // [[1, NaN], [inf, 1]] · I
      backend.matmul({
        a,
        b,
        c,
        batch: 1,
        m: 2,
        n: 2,
        k: 2,
        transposeA: false,
        transposeB: false,
        strideA: 0,
        strideB: 0,
      });
      assert.ok(Number.isNaN(c[0]) && Number.isNaN(c[1]), `row 0 must be NaN: ${Array.from(c)}`);
      assert.equal(c[2], Infinity);
      assert.ok(Number.isNaN(c[3]), `inf·0 is NaN in IEEE arithmetic, got ${c[3]}`);
    });
  });
}
