/**
 * Agreement between two backends on the same realistic inputs (model-sized shapes, not the
 * awkward corner cases of the main suite): every kernel's outputs must match to ~1e-5
 * relative to the output's scale. Catches divergences the float64 reference cannot see
 * (e.g. layouts only exercised at real sizes: 64-wide heads, 128-token rows, vocab rows).
 */
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { assertClose } from './assert-close.js';
import { attentionInputs, runBackward, runForward } from './suite-attention.js';
import { allocate, createRandom, int32ViewOf, randomArray, viewOf } from './random.js';

const TOLERANCE = { relative: 1e-5, relativeToScale: 1e-5 };

type Run = (backend: KernelBackend) => Record<string, Float32Array | number[]>;

function agree(candidate: KernelBackend, reference: KernelBackend, name: string, run: Run): void {
  test(name, () => {
    const expected = run(reference);
    const actual = run(candidate);
    for (const key of Object.keys(expected)) {
      assertClose(actual[key], expected[key], TOLERANCE, `${name}: ${key}`);
    }
  });
}

export function runAgreementSuite(candidate: KernelBackend, reference: KernelBackend): void {
  describe(`agreement with ${reference.name}`, () => {
    for (const [m, n, k, transposeA, transposeB] of [
      [2048 / 16, 704, 256, false, true],
      [256, 256, 128, true, false],
      [5, 704, 256, false, true],
      [1, 256, 704, false, false],
      [3, 100, 70, true, true],
    ] as const) {
      agree(
        candidate,
        reference,
        `matmul ${m}x${n}x${k} tA=${transposeA} tB=${transposeB}`,
        (backend) => {
          const random = createRandom(m + n + k);
          const a = randomArray(random, m * k);
          const b = randomArray(random, k * n);
          const c = randomArray(random, m * n);
          backend.matmul({
            a,
            b,
            c,
            batch: 1,
            m,
            n,
            k,
            transposeA,
            transposeB,
            strideA: 0,
            strideB: 0,
            alpha: 0.5,
            beta: 0.5,
          });
          return { c };
        },
      );
    }

    // bfloat16 weights at SmolLM2-like widths: decode (1 row), prefill (32), dInput (B [k×n]).
    for (const [m, n, k, transposeB] of [
      [1, 1536, 576, true],
      [32, 576, 1536, true],
      [24, 576, 1536, false],
    ] as const) {
      agree(candidate, reference, `matmulBfloat16 ${m}x${n}x${k} tB=${transposeB}`, (backend) => {
        const random = createRandom(m + n + k + 1);
        const a = randomArray(random, m * k);
        const b = Uint16Array.from(randomArray(random, k * n), (value) => {
          const bits = new Uint32Array(new Float32Array([value]).buffer)[0]!;
          return bits >>> 16;
        });
        const c = randomArray(random, m * n);
        backend.matmulBfloat16({ a, b, c, m, n, k, transposeB, alpha: 0.5, beta: 0.5 });
        return { c };
      });
    }

    agree(candidate, reference, 'batched matmul: 8 products of 64x72x64, B shared', (backend) => {
      const random = createRandom(6);
      const [batch, m, n, k] = [8, 64, 72, 64];
      const a = randomArray(random, batch * m * k);
      const b = randomArray(random, k * n);
      const c = allocate(batch * m * n);
      backend.matmul({
        a,
        b,
        c,
        batch,
        m,
        n,
        k,
        transposeA: true,
        transposeB: false,
        strideA: m * k,
        strideB: 0,
      });
      return { c };
    });

    agree(
      candidate,
      reference,
      'attention [2, 128, 4 heads / 2 kv, 64] forward and backward',
      (backend) => {
        const inputs = attentionInputs(
          {
            name: 'model-sized',
            shape: {
              batch: 2,
              queryLength: 128,
              keyLength: 128,
              keyCapacity: 128,
              heads: 4,
              kvHeads: 2,
              headDim: 64,
              queryStart: 0,
            },
            mask: [...new Array(128).fill(1), ...new Array(5).fill(0), ...new Array(123).fill(1)],
          },
          1,
        );
        const forward = runForward(backend, inputs, true);
        const gradOutput = randomArray(createRandom(2), inputs.query.length);
        return {
          output: forward.output,
          probabilities: forward.probabilities!,
          ...runBackward(backend, inputs, forward.probabilities!, gradOutput),
        };
      },
    );

    agree(candidate, reference, 'scoring rows [300, 151] with entropy, and backward', (backend) => {
      const random = createRandom(3);
      const rows = 300;
      const columns = 151;
      const logits = randomArray(random, rows * columns, 5);
      const targets = int32ViewOf(Array.from({ length: rows }, (_, r) => (r * 37) % columns));
      const logProbs = allocate(rows);
      const entropy = allocate(rows);
      const logSumExp = allocate(rows);
      backend.gatherLogProbs({ logits, targets, rows, columns, logProbs, entropy, logSumExp });
      const gradLogits = allocate(rows * columns);
      const gradLogProbs = randomArray(random, rows);
      const gradEntropy = randomArray(random, rows);
      backend.gatherLogProbsBackward({
        logits,
        targets,
        rows,
        columns,
        logSumExp,
        gradLogProbs,
        gradEntropy,
        gradLogits,
      });
      const softmax = allocate(rows * columns);
      backend.softmax({ input: logits, output: softmax, rows, columns });
      return { logProbs, entropy, logSumExp, gradLogits, softmax };
    });

    agree(
      candidate,
      reference,
      'rmsNorm, swiglu and rope on [2048, 704]-sized activations',
      (backend) => {
        const random = createRandom(4);
        const rows = 2048;
        const columns = 704;
        const input = randomArray(random, rows * columns);
        const weight = randomArray(random, columns);
        const output = allocate(rows * columns);
        const inverseRms = allocate(rows);
        backend.rmsNorm({ input, weight, output, inverseRms, rows, columns, epsilon: 1e-6 });
        const gradInput = allocate(rows * columns);
        const gradWeight = allocate(columns);
        backend.rmsNormBackward({
          input,
          weight,
          inverseRms,
          gradOutput: output,
          gradInput,
          gradWeight,
          rows,
          columns,
        });
        const swiglu = allocate(rows * columns);
        backend.swiglu({ gate: input, up: output, output: swiglu });
        const rotated = viewOf(input.subarray(0, 16 * 128 * 256));
        const positions = int32ViewOf(Array.from({ length: 16 * 128 }, (_, i) => i % 128));
        backend.rope({
          data: rotated,
          source: rotated,
          positions,
          batch: 16,
          length: 128,
          heads: 4,
          headDim: 64,
          theta: 10000,
          inverse: false,
        });
        return { output, inverseRms, gradInput, gradWeight, swiglu, rotated };
      },
    );

    agree(candidate, reference, 'adamw on 100k parameters, then sumOfSquares', (backend) => {
      const random = createRandom(5);
      const length = 100_000;
      const parameter = randomArray(random, length);
      const gradient = randomArray(random, length);
      const firstMoment = allocate(length);
      const secondMoment = allocate(length);
      for (let step = 1; step <= 3; step++) {
        backend.adamw({
          parameter,
          gradient,
          firstMoment,
          secondMoment,
          learningRate: 1e-3,
          beta1: 0.9,
          beta2: 0.999,
          epsilon: 1e-8,
          weightDecay: 0.1,
          step,
        });
      }
      return {
        parameter,
        firstMoment,
        secondMoment,
        sumOfSquares: [backend.sumOfSquares({ input: parameter })],
      };
    });
  });
}
