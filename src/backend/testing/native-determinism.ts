/**
 * The native kernels give bit-identical results whatever the thread count: every reduction
 * across threads goes through fixed-size partials summed in a fixed order. (Runs are
 * reproducible bit for bit on one machine, also when TEAMTR_NUM_THREADS changes.)
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NativeAddon } from '../native-addon.js';
import type { KernelBackend } from '../types.js';
import { attentionInputs, runForward } from './suite-attention.js';
import { allocate, createRandom, randomArray } from './random.js';

function outputs(backend: KernelBackend): Float32Array[] {
  const random = createRandom(99);
  const [m, n, k] = [300, 260, 530];
  const a = randomArray(random, m * k);
  const b = randomArray(random, k * n);
  const c = allocate(m * n);
  backend.matmul({
    a,
    b,
    c,
    batch: 1,
    m,
    n,
    k,
    transposeA: false,
    transposeB: true,
    strideA: 0,
    strideB: 0,
  });
  // Deep, wide and many-rowed: the packed kernel (on AVX-512 hosts), whose tasks split the rows
  // by the thread count and the 1,100 columns into chunks.
  const [packedM, packedN, packedK] = [600, 1100, 1030];
  const packed = allocate(packedM * packedN);
  backend.matmul({
    a: randomArray(random, packedM * packedK),
    b: randomArray(random, packedK * packedN),
    c: packed,
    batch: 1,
    m: packedM,
    n: packedN,
    k: packedK,
    transposeA: false,
    transposeB: false,
    strideA: 0,
    strideB: 0,
  });
  // Both layouts of a bfloat16 weight, few and many rows.
  const bfloat16Products: Float32Array[] = [];
  const bits = new Uint16Array(k * n).map((_value, index) => (index * 7919) % 0x7f00);
  for (const [rows, transposeB] of [
    [3, true],
    [300, true],
    [300, false],
  ] as const) {
    const product = allocate(rows * n);
    backend.matmulBfloat16({
      a: a.subarray(0, rows * k),
      b: bits,
      c: product,
      m: rows,
      n,
      k,
      transposeB,
    });
    bfloat16Products.push(product);
  }
  // x·Wᵀ with A past L2 and k = 600: the lane tile run by chunks of B, rows split by the thread
  // count (matmul_bfloat16_lanes.c).
  const [chunkM, chunkN, chunkK] = [700, 1100, 600];
  const chunked = allocate(chunkM * chunkN);
  backend.matmulBfloat16({
    a: randomArray(random, chunkM * chunkK),
    b: new Uint16Array(chunkN * chunkK).map((_value, index) => (index * 7919) % 0x7f00),
    c: chunked,
    m: chunkM,
    n: chunkN,
    k: chunkK,
    transposeB: true,
  });
  bfloat16Products.push(chunked);
  const [rows, columns] = [1000, 300];
  const input = randomArray(random, rows * columns);
  const weight = randomArray(random, columns);
  const inverseRms = allocate(rows);
  backend.rmsNorm({
    input,
    weight,
    output: allocate(rows * columns),
    inverseRms,
    rows,
    columns,
    epsilon: 1e-6,
  });
  const gradWeight = allocate(columns);
  const gradInput = allocate(rows * columns);
  backend.rmsNormBackward({
    input,
    weight,
    inverseRms,
    gradOutput: input,
    gradInput,
    gradWeight,
    rows,
    columns,
  });
  const inputs = attentionInputs(
    {
      name: 'determinism',
      shape: {
        batch: 3,
        queryLength: 70,
        keyLength: 70,
        keyCapacity: 70,
        heads: 4,
        kvHeads: 2,
        headDim: 32,
        queryStart: 0,
      },
      mask: null,
    },
    5,
  );
  const forward = runForward(backend, inputs, true);
  const grads = {
    gradQuery: allocate(inputs.query.length),
    gradKey: allocate(inputs.key.length),
    gradValue: allocate(inputs.value.length),
  };
  backend.attentionBackward({
    ...inputs.shape,
    query: inputs.query,
    key: inputs.key,
    value: inputs.value,
    probabilities: forward.probabilities!,
    gradOutput: inputs.query,
    ...grads,
  });
  const total = new Float32Array([backend.sumOfSquares({ input })]);
  return [
    c,
    packed,
    gradWeight,
    gradInput,
    forward.output,
    grads.gradKey,
    grads.gradValue,
    grads.gradQuery,
    total,
    ...bfloat16Products,
  ];
}

/** `addon`: the build `backend` runs on, whose thread count the test changes. */
export function runNativeDeterminismTests(backend: KernelBackend, addon: NativeAddon): void {
  describe('determinism', () => {
    test('results are bit-identical with 1, 2 and 3 threads', () => {
      const original = addon.info().threads;
      const setNativeThreads = (threads: number) => addon.setThreads(threads);
      try {
        setNativeThreads(1);
        const single = outputs(backend);
        for (const threads of [2, 3]) {
          setNativeThreads(threads);
          const multi = outputs(backend);
          single.forEach((values, index) => {
            assert.deepEqual(
              Buffer.from(multi[index].buffer, multi[index].byteOffset, multi[index].byteLength),
              Buffer.from(values.buffer, values.byteOffset, values.byteLength),
              `output ${index} with ${threads} threads`,
            );
          });
        }
      } finally {
        setNativeThreads(original);
      }
    });
  });
}
