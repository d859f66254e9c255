import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KernelBackend } from '../types.js';
import { allocate, createRandom, randomArray, viewOf } from './random.js';

/**
 * The gradient kernels with beta 0 write their outputs as 0 + what beta 1 adds: bit for bit
 * what adding to zeros gives (−0 included, which becomes +0), without reading the outputs
 * first (they hold NaN here). Inputs with zeros of both signs, so a −0 derivative occurs.
 */
export function gradientWriteTests(backend: KernelBackend): void {
  const signedZeros = (length: number, seed: number): Float32Array => {
    const values = randomArray(createRandom(seed), length);
    for (let index = 0; index < length; index += 5) values[index] = index % 10 ? -0 : 0;
    return values;
  };
  /** Runs `write` on outputs of NaN (beta 0) and of zeros (beta 1); their bits must agree. */
  const agree = (
    length: number,
    outputs: number,
    write: (targets: Float32Array[], beta: 0 | 1) => void,
    label: string,
  ) => {
    const written = Array.from({ length: outputs }, () => allocate(length).fill(Number.NaN));
    const added = Array.from({ length: outputs }, () => allocate(length));
    write(written, 0);
    write(added, 1);
    written.forEach((target, index) =>
      assert.deepEqual(Array.from(target), Array.from(added[index]!), `${label}, output ${index}`),
    );
  };

  describe('gradient kernels, beta 0: written, not added', () => {
    test('axpy', () => {
      for (const length of [1, 13, 50_001]) {
        const x = signedZeros(length, 30 + length);
        for (const alpha of [1, -0.75])
          agree(
            length,
            1,
            ([y], beta) => backend.axpy({ alpha, x, y: y!, beta }),
            `axpy ${length} α ${alpha}`,
          );
      }
    });

    test('swigluBackward', () => {
      for (const length of [1, 13, 40_001]) {
        const gate = signedZeros(length, 40 + length);
        const up = signedZeros(length, 50 + length);
        const gradOutput = signedZeros(length, 60 + length);
        agree(
          length,
          2,
          ([gradGate, gradUp], beta) =>
            backend.swigluBackward({
              gate,
              up,
              gradOutput,
              gradGate: gradGate!,
              gradUp: gradUp!,
              beta,
            }),
          `swigluBackward ${length}`,
        );
      }
    });

    test('gatherLogProbsBackward, rows skipped and not, with and without the entropy term', () => {
      const [rows, columns] = [5, 37];
      const logits = randomArray(createRandom(70), rows * columns);
      const targets = Int32Array.from([0, 36, 5, 5, 12]);
      const logSumExp = allocate(rows);
      backend.gatherLogProbs({
        logits,
        targets,
        rows,
        columns,
        logProbs: allocate(rows),
        entropy: null,
        logSumExp,
      });
      // Rows 1 and 3 have no gradient: skipped when adding, zeros when written.
      const gradLogProbs = viewOf([0.5, 0, -1.25, 0, 2]);
      for (const gradEntropy of [null, viewOf([0.25, 0, 0, 0, -0.5])])
        agree(
          rows * columns,
          1,
          ([gradLogits], beta) =>
            backend.gatherLogProbsBackward({
              logits,
              targets,
              rows,
              columns,
              logSumExp,
              gradLogProbs,
              gradEntropy,
              gradLogits: gradLogits!,
              beta,
            }),
          `gatherLogProbsBackward, entropy ${gradEntropy !== null}`,
        );
    });
  });
}
