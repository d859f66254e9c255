import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AttentionShape, KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { finiteDifferenceGradient, weightedSum } from './finite-difference.js';
import { allocate, createRandom, randomArray, viewOf } from './random.js';
import { attention64 } from './reference64.js';

type ShapeWithoutMask = Omit<AttentionShape, 'keyMask' | 'scale'>;

interface AttentionCase {
  name: string;
  shape: ShapeWithoutMask;
  /** [batch, keyCapacity] of 0/1, or null. */
  mask: number[] | null;
}

export const ATTENTION_CASES: AttentionCase[] = [
  {
    name: 'grouped-query prefill',
    shape: {
      batch: 2,
      queryLength: 7,
      keyLength: 7,
      keyCapacity: 7,
      heads: 4,
      kvHeads: 2,
      headDim: 8,
      queryStart: 0,
    },
    mask: null,
  },
  {
    // Batch 1 is left-padded: its query 0 and 1 see only padding and must output 0.
    name: 'left padding, rows without a valid key',
    shape: {
      batch: 2,
      queryLength: 6,
      keyLength: 6,
      keyCapacity: 6,
      heads: 2,
      kvHeads: 1,
      headDim: 5,
      queryStart: 0,
    },
    mask: [1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1],
  },
  {
    name: 'decode step against a KV cache with spare capacity',
    shape: {
      batch: 2,
      queryLength: 1,
      keyLength: 10,
      keyCapacity: 16,
      heads: 6,
      kvHeads: 2,
      headDim: 4,
      queryStart: 9,
    },
    mask: [
      ...[0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
      ...new Array(6).fill(0),
      ...new Array(10).fill(1),
      ...new Array(6).fill(1),
    ],
  },
  {
    name: 'chunked prefill (queryStart > 0)',
    shape: {
      batch: 1,
      queryLength: 4,
      keyLength: 7,
      keyCapacity: 8,
      heads: 2,
      kvHeads: 2,
      headDim: 6,
      queryStart: 3,
    },
    mask: null,
  },
  {
    // Native decode kernels work in 16-key blocks and 64-float value chunks: 37 keys leave a
    // partial key block, head dim 72 a partial chunk plus a scalar tail.
    name: 'decode step, wide heads with ragged key block and head-dim tail',
    shape: {
      batch: 2,
      queryLength: 1,
      keyLength: 37,
      keyCapacity: 40,
      heads: 4,
      kvHeads: 2,
      headDim: 72,
      queryStart: 36,
    },
    mask: [...[0, 0, 0, ...new Array(37).fill(1)], ...[...new Array(37).fill(1), 0, 0, 0]],
  },
  {
    // More sequences than threads: native decode tasks take every T-th sequence and stream the
    // next one's keys and values in while computing; row 3 is all padding (nothing to stream).
    name: 'decode step, five sequences of SmolLM2-like heads (3 kv heads of 3)',
    shape: {
      batch: 5,
      queryLength: 1,
      keyLength: 40,
      keyCapacity: 43,
      heads: 9,
      kvHeads: 3,
      headDim: 64,
      queryStart: 39,
    },
    mask: [0, 2, 7, 43, 21].flatMap((padding) => [
      ...new Array(Math.min(padding, 43)).fill(0),
      ...new Array(Math.max(43 - padding, 0)).fill(1),
    ]),
  },
  {
    name: 'two-query decode step, head dim 136 (two value chunks)',
    shape: {
      batch: 1,
      queryLength: 2,
      keyLength: 19,
      keyCapacity: 19,
      heads: 2,
      kvHeads: 1,
      headDim: 136,
      queryStart: 17,
    },
    mask: null,
  },
  {
    name: 'long rows and 64-wide heads (past native block sizes)',
    shape: {
      batch: 2,
      queryLength: 70,
      keyLength: 70,
      keyCapacity: 70,
      heads: 2,
      kvHeads: 1,
      headDim: 64,
      queryStart: 0,
    },
    mask: null,
  },
];

export interface AttentionInputs {
  shape: AttentionShape;
  query: Float32Array;
  key: Float32Array;
  value: Float32Array;
}

export function attentionInputs(testCase: AttentionCase, seed: number): AttentionInputs {
  const random = createRandom(seed);
  const { batch, queryLength, keyCapacity, heads, kvHeads, headDim } = testCase.shape;
  const shape: AttentionShape = {
    ...testCase.shape,
    scale: 1 / Math.sqrt(headDim),
    keyMask: testCase.mask ? viewOf(testCase.mask) : null,
  };
  return {
    shape,
    query: randomArray(random, batch * queryLength * heads * headDim),
    key: randomArray(random, batch * keyCapacity * kvHeads * headDim),
    value: randomArray(random, batch * keyCapacity * kvHeads * headDim),
  };
}

export function runForward(
  backend: KernelBackend,
  inputs: AttentionInputs,
  withProbabilities: boolean,
): {
  output: Float32Array;
  probabilities: Float32Array | null;
} {
  const { batch, queryLength, keyLength, heads, headDim } = inputs.shape;
  const output = allocate(batch * queryLength * heads * headDim).fill(NaN);
  const probabilities = withProbabilities
    ? allocate(batch * heads * queryLength * keyLength).fill(NaN)
    : null;
  backend.attention({
    ...inputs.shape,
    query: inputs.query,
    key: inputs.key,
    value: inputs.value,
    output,
    probabilities,
  });
  return { output, probabilities };
}

/** Attention backward into fresh zeroed gradient arrays, from a forward run with probabilities. */
export function runBackward(
  backend: KernelBackend,
  inputs: AttentionInputs,
  probabilities: Float32Array,
  gradOutput: Float32Array,
): { gradQuery: Float32Array; gradKey: Float32Array; gradValue: Float32Array } {
  const { shape, query, key, value } = inputs;
  const grads = {
    gradQuery: allocate(query.length),
    gradKey: allocate(key.length),
    gradValue: allocate(value.length),
  };
  backend.attentionBackward({ ...shape, query, key, value, probabilities, gradOutput, ...grads });
  return grads;
}

function checkBackward(backend: KernelBackend, inputs: AttentionInputs, label: string): void {
  const { shape, query, key, value } = inputs;
  const forward = runForward(backend, inputs, true);
  const random = createRandom(7);
  const gradOutput = randomArray(random, query.length);
  const grads = {
    gradQuery: allocate(query.length).fill(0.5),
    gradKey: allocate(key.length).fill(-1),
    gradValue: allocate(value.length).fill(2),
  };
  backend.attentionBackward({
    ...shape,
    query,
    key,
    value,
    probabilities: forward.probabilities!,
    gradOutput,
    ...grads,
  });
  const loss = (q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>): number =>
    weightedSum(attention64(shape, q, k, v).output, gradOutput);
  const tolerance = { relative: 1e-4, absolute: 2e-5 };
  const expectedQuery = finiteDifferenceGradient((q) => loss(q, key, value), query).map(
    (g) => g + 0.5,
  );
  const expectedKey = finiteDifferenceGradient((k) => loss(query, k, value), key).map((g) => g - 1);
  const expectedValue = finiteDifferenceGradient((v) => loss(query, key, v), value).map(
    (g) => g + 2,
  );
  assertClose(grads.gradQuery, expectedQuery, tolerance, `${label} gradQuery`);
  assertClose(grads.gradKey, expectedKey, tolerance, `${label} gradKey`);
  assertClose(grads.gradValue, expectedValue, tolerance, `${label} gradValue`);
}

export function attentionTests(backend: KernelBackend): void {
  describe('attention', () => {
    ATTENTION_CASES.forEach((testCase, index) => {
      test(`forward: ${testCase.name}`, () => {
        const inputs = attentionInputs(testCase, 300 + index);
        const expected = attention64(inputs.shape, inputs.query, inputs.key, inputs.value);
        const withProbabilities = runForward(backend, inputs, true);
        assertClose(
          withProbabilities.output,
          expected.output,
          { relative: 1e-5, absolute: 1e-6 },
          'output',
        );
        assertClose(
          withProbabilities.probabilities!,
          expected.probabilities,
          { relative: 1e-5, absolute: 1e-7 },
          'probabilities',
        );
        const withoutProbabilities = runForward(backend, inputs, false);
        assertClose(
          withoutProbabilities.output,
          expected.output,
          { relative: 1e-5, absolute: 1e-6 },
          'output (no-grad)',
        );
      });
    });

    ATTENTION_CASES.slice(0, 4).forEach((testCase, index) => {
      test(`backward vs finite differences: ${testCase.name}`, () => {
        checkBackward(backend, attentionInputs(testCase, 400 + index), testCase.name);
      });
    });

    // The sampled = scored property: a decode step (one query against the cache) must give the
    // bits the same query gets in a whole-sequence pass, with or without saved probabilities
    // (native decode steps without them run a kv head's query heads together). Widths past
    // the native 16-key blocks and 64-float value chunks; groups of 3 and 5 query heads (more
    // than the 4 a value row is shared by); rows left-padded.
    for (const [heads, headDim] of [
      [6, 64],
      [10, 72],
    ] as const) {
      test(`a decode step gives a full pass's bits (${heads} heads / 2 kv heads, dim ${headDim})`, () => {
        // Five rows: more than the native decode's tasks (one per thread), each left-padded
        // by 3 more slots than the one before.
        const [batch, length, kvHeads] = [5, 37, 2];
        const mask = Array.from({ length: batch }, (_row, row) => [
          ...new Array(3 * row).fill(0),
          ...new Array(length - 3 * row).fill(1),
        ]).flat();
        const full = attentionInputs(
          {
            name: 'full pass',
            shape: {
              batch,
              queryLength: length,
              keyLength: length,
              keyCapacity: length,
              heads,
              kvHeads,
              headDim,
              queryStart: 0,
            },
            mask,
          },
          600 + heads,
        );
        const width = heads * headDim;
        const lastQueries = allocate(batch * width);
        for (let row = 0; row < batch; row++) {
          const from = (row * length + length - 1) * width;
          lastQueries.set(full.query.subarray(from, from + width), row * width);
        }
        const decode: AttentionInputs = {
          ...full,
          shape: { ...full.shape, queryLength: 1, queryStart: length - 1 },
          query: lastQueries,
        };
        const expected = runForward(backend, full, false).output;
        for (const withProbabilities of [false, true]) {
          const { output } = runForward(backend, decode, withProbabilities);
          for (let row = 0; row < batch; row++) {
            const from = (row * length + length - 1) * width;
            assert.deepEqual(
              Array.from(output.subarray(row * width, (row + 1) * width)),
              Array.from(expected.subarray(from, from + width)),
              `row ${row}, probabilities saved: ${withProbabilities}`,
            );
          }
        }
      });
    }

    test('a query with no valid key outputs 0 and passes back no gradient', () => {
      const inputs = attentionInputs(ATTENTION_CASES[1], 500);
      const { shape, query } = inputs;
      const forward = runForward(backend, inputs, true);
      const { heads, headDim } = shape;
      // Batch 1, queries 0 and 1 (all heads) see only padding.
      const blocked = query.length / 2;
      const blockedEnd = blocked + 2 * heads * headDim;
      assert.ok(forward.output.subarray(blocked, blockedEnd).every((x) => x === 0));
      const gradOutput = allocate(query.length);
      gradOutput.fill(1, blocked, blockedEnd);
      const grads = runBackward(backend, inputs, forward.probabilities!, gradOutput);
      for (const [name, gradient] of Object.entries(grads)) {
        assert.ok(
          gradient.every((x) => x === 0),
          `${name} must be 0`,
        );
      }
    });
  });
}
