import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { allocate, createRandom, randomArray } from './random.js';
import { matmul64 } from './reference64.js';

/**
 * matmulGemmOrder against a float64 product, on row counts of decoding (1, 3), the last of the
 * native few-row kernel (8) and the first past it (9), past the ordinary few-row kernels (17)
 * and of prefill (65), with column and depth counts off every vector and tile size and depths
 * over several 256-deep slices; and the property sampled = scored log-probs rest on: a row's
 * result does not depend on how many other rows are multiplied with it, including past the
 * depth (1,024) and row count (256) where the native product switches to its packed kernel.
 */
export function matmulGemmOrderTests(backend: KernelBackend): void {
  describe('matmulGemmOrder', () => {
    test('odd shapes and tails, both layouts of B', () => {
      let seed = 400;
      for (const m of [1, 3, 8, 9, 17, 65]) {
        for (const [n, k] of [
          [1, 1],
          [7, 5],
          [17, 19],
          [70, 300],
          [129, 33],
          [33, 530],
        ] as const) {
          for (const transposeB of [false, true]) {
            const random = createRandom(seed++);
            const a = randomArray(random, m * k);
            const b = randomArray(random, k * n);
            // NaN in C: the product overwrites it.
            const c = allocate(m * n).fill(Number.NaN);
            const shape = { batch: 1, m, n, k, transposeA: false, transposeB };
            const expected = matmul64(a, b, allocate(m * n), {
              ...shape,
              strideA: 0,
              strideB: 0,
              alpha: 1,
              beta: 0,
            });
            backend.matmulGemmOrder({ a, b, c, m, n, k, transposeB });
            const label = `matmulGemmOrder ${JSON.stringify({ m, n, k, transposeB })}`;
            assertClose(
              c,
              expected,
              { relative: 1e-5, relativeToScale: 2e-6 * Math.sqrt(k) },
              label,
            );
          }
        }
      }
    });

    test('k = 0 gives zeros', () => {
      const c = allocate(3 * 4).fill(Number.NaN);
      backend.matmulGemmOrder({
        a: allocate(0),
        b: allocate(0),
        c,
        m: 3,
        n: 4,
        k: 0,
        transposeB: true,
      });
      assert.deepEqual(Array.from(c), new Array(12).fill(0));
    });

    test('a row gives the same bits whatever the number of rows beside it', () => {
      const random = createRandom(500);
      for (const transposeB of [false, true]) {
        for (const [m, n, k] of [
          [65, 70, 300],
          [65, 131, 8],
          [65, 129, 576],
          [300, 37, 1030],
        ] as const) {
          const a = randomArray(random, m * k);
          const b = randomArray(random, k * n);
          const together = allocate(m * n);
          backend.matmulGemmOrder({ a, b, c: together, m, n, k, transposeB });
          for (const count of [1, 2, 3, 8, 9, 17]) {
            for (let first = 0; first + count <= m; first += 29) {
              const part = allocate(count * n);
              const rows = a.subarray(first * k, (first + count) * k);
              backend.matmulGemmOrder({ a: rows, b, c: part, m: count, n, k, transposeB });
              assert.deepEqual(
                Array.from(part),
                Array.from(together.subarray(first * n, (first + count) * n)),
                `rows ${first}..${first + count} of ${m} (transposeB ${transposeB}, n ${n}, k ${k})`,
              );
            }
          }
        }
      }
    });
  });
}
