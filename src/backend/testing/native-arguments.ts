/**
 * The native addon's own argument checks: wrong types throw TypeError and sizes that do not
 * fit the arrays throw RangeError, instead of crashing the process or touching memory
 * outside the arrays.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { allocate, int32ViewOf } from './random.js';

export function runNativeArgumentTests(backend: KernelBackend): void {
  describe('argument checks', () => {
    const a = allocate(6);
    const b = allocate(6);
    const c = allocate(4);
    const base = {
      a,
      b,
      c,
      batch: 1,
      m: 2,
      n: 2,
      k: 3,
      transposeA: false,
      transposeB: false,
      strideA: 0,
      strideB: 0,
    };

    test('a wrong array type is a TypeError', () => {
      assert.throws(
        () => backend.matmul({ ...base, a: new Float64Array(6) as unknown as Float32Array }),
        TypeError,
      );
      assert.throws(
        () =>
          backend.softmax({
            input: [1, 2] as unknown as Float32Array,
            output: allocate(2),
            rows: 1,
            columns: 2,
          }),
        TypeError,
      );
      assert.throws(
        () =>
          backend.rope({
            data: allocate(4),
            source: allocate(4),
            positions: new Float32Array(1) as unknown as Int32Array,
            batch: 1,
            length: 1,
            heads: 1,
            headDim: 4,
            theta: 10000,
            inverse: false,
          }),
        TypeError,
      );
    });

    test('a wrong number type is a TypeError', () => {
      assert.throws(() => backend.matmul({ ...base, m: '2' as unknown as number }), TypeError);
      assert.throws(
        () => backend.matmul({ ...base, transposeA: 1 as unknown as boolean }),
        TypeError,
      );
    });

    test('a bfloat16 weight must be a Uint16Array that holds k·n values', () => {
      const product = { a, c, m: 2, n: 2, k: 3, transposeB: true };
      backend.matmulBfloat16({ ...product, b: new Uint16Array(6) });
      assert.throws(
        () => backend.matmulBfloat16({ ...product, b: b as unknown as Uint16Array }),
        TypeError,
      );
      assert.throws(
        () => backend.matmulBfloat16({ ...product, b: new Uint16Array(5) }),
        RangeError,
      );
    });

    test('sizes larger than the arrays are a RangeError', () => {
      assert.throws(() => backend.matmul({ ...base, k: 4 }), RangeError);
      assert.throws(() => backend.matmul({ ...base, batch: 2, strideA: 6 }), RangeError);
      assert.throws(
        () => backend.softmax({ input: allocate(5), output: allocate(6), rows: 2, columns: 3 }),
        RangeError,
      );
      assert.throws(
        () => backend.swiglu({ gate: allocate(5), up: allocate(4), output: allocate(5) }),
        RangeError,
      );
      assert.throws(() => backend.matmul({ ...base, m: -1 }), RangeError);
      assert.throws(() => backend.matmul({ ...base, m: 1.5 }), RangeError);
    });

    test('inconsistent attention shapes are a RangeError', () => {
      const shape = {
        batch: 1,
        queryLength: 2,
        keyLength: 2,
        keyCapacity: 2,
        heads: 3,
        kvHeads: 2,
        headDim: 4,
        queryStart: 0,
        scale: 0.5,
        keyMask: null,
      };
      const arrays = {
        query: allocate(24),
        key: allocate(16),
        value: allocate(16),
        output: allocate(24),
        probabilities: null,
      };
      assert.throws(
        () => backend.attention({ ...shape, ...arrays }),
        RangeError,
        'heads not a multiple of kvHeads',
      );
      assert.throws(
        () => backend.attention({ ...shape, heads: 2, keyLength: 3, ...arrays }),
        RangeError,
        'keyLength > keyCapacity',
      );
      assert.throws(
        () => backend.attention({ ...shape, heads: 2, ...arrays, key: allocate(15) }),
        RangeError,
        'short key',
      );
    });

    test('every array is checked against its length in the kernel table', () => {
      const up = allocate(4);
      assert.throws(
        () => backend.swiglu({ gate: allocate(5), up, output: allocate(5) }),
        /swiglu: up has 4 elements but the sizes need 5/,
      );
      const norm = {
        input: allocate(6),
        weight: allocate(3),
        output: allocate(6),
        mean: allocate(2),
        inverseStd: allocate(2),
        rows: 2,
        columns: 3,
        epsilon: 1e-5,
      };
      backend.layerNorm({ ...norm, bias: null });
      assert.throws(() => backend.layerNorm({ ...norm, bias: allocate(2) }), RangeError);
      const gather = {
        logits: allocate(6),
        targets: int32ViewOf([0, 1]),
        rows: 2,
        columns: 3,
        logProbs: allocate(2),
        logSumExp: null,
      };
      backend.gatherLogProbs({ ...gather, entropy: null });
      assert.throws(
        () => backend.gatherLogProbs({ ...gather, entropy: allocate(1) }),
        /entropy has 1 elements but the sizes need 2/,
      );
    });

    test('beta other than 0 or 1 for a gradient kernel is a RangeError', () => {
      const x = new Float32Array(4);
      assert.throws(
        () => backend.axpy({ alpha: 1, x, y: new Float32Array(4), beta: 0.5 }),
        RangeError,
      );
    });

    test('a rope source shorter than the data is a RangeError naming it', () => {
      assert.throws(
        () =>
          backend.rope({
            data: allocate(8),
            source: allocate(4),
            positions: int32ViewOf([0, 1]),
            batch: 1,
            length: 2,
            heads: 1,
            headDim: 4,
            theta: 10000,
            inverse: false,
          }),
        (error: unknown) => error instanceof RangeError && /source/.test(error.message),
      );
    });

    test('an odd headDim for rope is a RangeError', () => {
      assert.throws(
        () =>
          backend.rope({
            data: allocate(3),
            source: allocate(3),
            positions: int32ViewOf([0]),
            batch: 1,
            length: 1,
            heads: 1,
            headDim: 3,
            theta: 10000,
            inverse: false,
          }),
        RangeError,
      );
    });
  });
}
