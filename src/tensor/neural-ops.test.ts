import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import {
  add,
  attention,
  crossEntropy,
  embedding,
  gatherLogProbs,
  gelu,
  layerNorm,
  logSoftmax,
  multiply,
  prependRows,
  rmsNorm,
  rope,
  selectRows,
  softmax,
  swiglu,
  sum,
  tensor,
  Tensor,
} from './index.js';
import { allocate, clearPool, memoryStatistics, release } from './memory.js';
import { backwardFrom } from './tensor.js';
import { checkGradients, forEachBackend, randomLeaf } from './test-support/gradient-check.js';

describe('neural-network ops on every backend', () => {
  test('softmax and log-softmax: values, extreme logits, gradients', () => {
    forEachBackend(() => {
      const extreme = tensor([1e4, -1e4, 0, 1e4], [1, 4]);
      const probabilities = softmax(extreme).toArray();
      assert.deepEqual(
        probabilities.map((value) => Math.round(value * 1e6) / 1e6),
        [0.5, 0, 0, 0.5],
      );
      const logProbabilities = logSoftmax(extreme).toArray();
      assert.ok(
        Math.abs(logProbabilities[0]! + Math.LN2) < 1e-6 && logProbabilities[1]! < -1e4 + 1,
      );
      const random = new RandomGenerator(1);
      checkGradients({ inputs: [randomLeaf([3, 5], random)], fn: ([x]) => softmax(x!), random });
      checkGradients({ inputs: [randomLeaf([3, 5], random)], fn: ([x]) => logSoftmax(x!), random });
    });
  });

  test('gatherLogProbs with entropy, and masked cross-entropy', () => {
    forEachBackend(() => {
      const random = new RandomGenerator(2);
      const targets = Int32Array.from([0, 4, 2]);
      const logits = randomLeaf([3, 5], random);
      const gathered = gatherLogProbs(logits, targets, { entropy: true });
      const reference = logSoftmax(logits).data;
      targets.forEach((target, row) =>
        assert.ok(Math.abs(gathered.logProbs.data[row]! - reference[row * 5 + target]!) < 1e-5),
      );
      for (let row = 0; row < 3; row++) {
        let entropy = 0;
        for (let column = 0; column < 5; column++)
          entropy -= Math.exp(reference[row * 5 + column]!) * reference[row * 5 + column]!;
        assert.ok(Math.abs(gathered.entropy!.data[row]! - entropy) < 1e-5);
      }
      checkGradients({
        inputs: [logits],
        fn: ([x]) => gatherLogProbs(x!, targets).logProbs,
        random,
      });
      checkGradients({
        inputs: [logits],
        fn: ([x]) => gatherLogProbs(x!, targets, { entropy: true }).entropy!,
        random,
      });
      checkGradients({
        inputs: [logits],
        fn: ([x]) => {
          const both = gatherLogProbs(x!, targets, { entropy: true });
          return add(both.logProbs, both.entropy!);
        },
        random,
      });
      const weights = Float32Array.from([1, 0, 1]);
      const loss = crossEntropy(logits, targets, weights).item();
      assert.ok(Math.abs(loss + (reference[0]! + reference[12]!) / 2) < 1e-5);
      checkGradients({ inputs: [logits], fn: ([x]) => crossEntropy(x!, targets, weights), random });
      assert.throws(
        () => gatherLogProbs(logits, Int32Array.from([0, 5, 1])),
        /outside the vocabulary/,
      );
    });
  });

  test('norms (whole rows and per head), activations', () => {
    forEachBackend(() => {
      const random = new RandomGenerator(3);
      checkGradients({
        inputs: [randomLeaf([2, 3, 8], random), randomLeaf([8], random)],
        fn: ([x, w]) => rmsNorm(x!, w!, 1e-5),
        random,
      });
      checkGradients({
        inputs: [randomLeaf([2, 8], random), randomLeaf([4], random)],
        fn: ([x, w]) => rmsNorm(x!, w!, 1e-5),
        random,
      });
      checkGradients({
        inputs: [randomLeaf([3, 6], random), randomLeaf([6], random), randomLeaf([6], random)],
        fn: ([x, w, b]) => layerNorm(x!, w!, b!, 1e-5),
        random,
      });
      checkGradients({
        inputs: [randomLeaf([4, 6], random), randomLeaf([4, 6], random)],
        fn: ([g, u]) => swiglu(g!, u!),
        random,
      });
      checkGradients({ inputs: [randomLeaf([4, 6], random)], fn: ([x]) => gelu(x!), random });
      assert.throws(
        () => rmsNorm(randomLeaf([2, 6], random), randomLeaf([4], random), 1e-5),
        /does not match/,
      );
    });
  });

  test('rope preserves norms per pair and has the right gradient', () => {
    forEachBackend(() => {
      const random = new RandomGenerator(4);
      const x = randomLeaf([2, 3, 8], random);
      const positions = Int32Array.from([0, 1, 2, 5, 6, 7]);
      const rotated = rope(x, positions, { heads: 2, theta: 10000 });
      // Position 0 is the identity rotation.
      for (let index = 0; index < 8; index++)
        assert.ok(Math.abs(rotated.data[index]! - x.data[index]!) < 1e-6);
      checkGradients({
        inputs: [x],
        fn: ([v]) => rope(v!, positions, { heads: 2, theta: 100 }),
        random,
      });
    });
  });

  test('attention with GQA, padding mask and gradients', () => {
    forEachBackend(() => {
      const random = new RandomGenerator(5);
      const [batch, length, heads, kvHeads, headDim] = [2, 4, 4, 2, 3];
      const keyMask = Float32Array.from([0, 1, 1, 1, 1, 1, 1, 1]);
      const query = randomLeaf([batch, length, heads * headDim], random);
      const key = randomLeaf([batch, length, kvHeads * headDim], random);
      const value = randomLeaf([batch, length, kvHeads * headDim], random);
      checkGradients({
        inputs: [query, key, value],
        fn: ([q, k, v]) => attention(q!, k!, v!, { heads, kvHeads, keyMask }),
        random,
        samples: 40,
      });
      // Row 0's first query sees only a padding key: its output is exactly zero.
      const output = attention(query, key, value, { heads, kvHeads, keyMask });
      for (let index = 0; index < heads * headDim; index++) assert.equal(output.data[index], 0);
      // The first query of an unmasked row copies the first value of its kv head.
      const firstValue = value.data.subarray(
        length * kvHeads * headDim,
        length * kvHeads * headDim + headDim,
      );
      const firstOutput = output.data.subarray(
        length * heads * headDim,
        length * heads * headDim + headDim,
      );
      for (let index = 0; index < headDim; index++)
        assert.ok(Math.abs(firstOutput[index]! - firstValue[index]!) < 1e-6);
    });
  });

  test('embedding and selectRows scatter their gradients', () => {
    const random = new RandomGenerator(6);
    const table = randomLeaf([5, 3], random);
    const ids = Int32Array.from([4, 0, 4]);
    checkGradients({ inputs: [table], fn: ([t]) => embedding(t!, ids), random });
    assert.throws(() => embedding(table, Int32Array.from([5])), /outside the vocabulary/);
    const x = randomLeaf([2, 3, 4], random);
    checkGradients({
      inputs: [x],
      fn: ([v]) => selectRows(v!, Int32Array.from([5, 0, 5])),
      random,
    });
    assert.ok(selectRows(x, Int32Array.from([1])) instanceof Tensor);
  });

  test('prependRows: picked source rows (or zeros) before each sequence; gradients summed', () => {
    const random = new RandomGenerator(7);
    const source = randomLeaf([2, 3, 4], random); // six rows of four
    const own = randomLeaf([3, 2, 4], random);
    // Sequence 0 and 2 pick the same rows (a shared prefix), 1 has a zero row first.
    const indices = Int32Array.from([4, 5, -1, 1, 4, 5]);
    const joined = prependRows(source, indices, own);
    assert.deepEqual(joined.shape, [3, 4, 4]);
    assert.deepEqual(joined.data.subarray(0, 8), source.data.subarray(16, 24));
    assert.deepEqual(joined.data.subarray(16, 20), new Float32Array(4));
    assert.deepEqual(joined.data.subarray(8, 16), own.data.subarray(0, 8));
    checkGradients({ inputs: [source, own], fn: ([s, x]) => prependRows(s!, indices, x!), random });
    assert.throws(() => prependRows(source, Int32Array.from([6, 0, 0]), own), /prependRows/);
  });

  test("prependRows' backward: the bits of adding row by row in sequence order, unfilled input gradient", () => {
    // The loop the backward rule was: each picked row added in float32, sequences in order.
    const expected = (indices: Int32Array, gradOutput: Float32Array, shape: number[]) => {
      const [sourceRows, batch, length, features] = shape as [number, number, number, number];
      const before = indices.length / batch;
      const width = before + length;
      const source = new Float32Array(sourceRows * features);
      const input = new Float32Array(batch * length * features);
      for (let b = 0; b < batch; b++) {
        for (let s = 0; s < before; s++) {
          const row = indices[b * before + s]!;
          for (let column = 0; row >= 0 && column < features; column++)
            source[row * features + column]! += gradOutput[(b * width + s) * features + column]!;
        }
        for (let index = 0; index < length * features; index++)
          input[b * length * features + index]! +=
            gradOutput[(b * width + before) * features + index]!;
      }
      return { source, input };
    };
    forEachBackend((backendName) => {
      const random = new RandomGenerator(`prepend-rows-${backendName}`);
      // Odd shapes: 11 source rows of 37; 3 sequences of 5 own rows after 6 prefix slots, with
      // runs, a row picked twice in one sequence, rows shared across sequences and −1s.
      const [sourceRows, batch, length, features] = [11, 3, 5, 37];
      const indices = Int32Array.from([-1, -1, 2, 3, 4, 5, 7, 8, 9, 3, 4, 7, -1, 10, 2, 3, 4, 0]);
      const source = randomLeaf([sourceRows, features], random);
      const own = randomLeaf([batch, length, features], random);
      clearPool();
      const joined = prependRows(source, indices, own);
      const gradOutput = Float32Array.from({ length: joined.size }, () => random.normal() * 1e3);
      // Pooled buffers of the gradients' sizes, so that a zero-fill would be counted.
      for (const buffer of [allocate(own.size), allocate(source.size)]) release(buffer);
      const filled = memoryStatistics().zeroFilledBytes;
      joined.backward(gradOutput);
      assert.equal(memoryStatistics().zeroFilledBytes - filled, 4 * source.size, backendName);
      const reference = expected(indices, gradOutput, [sourceRows, batch, length, features]);
      assert.deepEqual(source.grad, reference.source, backendName);
      assert.deepEqual(own.grad, reference.input, backendName);
    });
  });

  test('backwardFrom: several roots of one graph pass their shared part on once, complete', () => {
    const random = new RandomGenerator(8);
    const x = randomLeaf([5], random);
    const first = multiply(x, x); // both roots depend on it
    const second = multiply(first, x);
    const weights = [randomLeaf([5], random).data, randomLeaf([5], random).data];
    backwardFrom([
      { tensor: first, gradient: weights[0]! },
      { tensor: second, gradient: weights[1]! },
    ]);
    // d/dx Σ w₀·x² + w₁·x³ = 2·w₀·x + 3·w₁·x²
    x.data.forEach((value, index) => {
      const expected = 2 * weights[0]![index]! * value + 3 * weights[1]![index]! * value ** 2;
      assert.ok(Math.abs(x.grad![index]! - expected) <= 1e-5 * Math.max(1, Math.abs(expected)));
    });
    assert.throws(() => backwardFrom([{ tensor: sum(x), gradient: new Float32Array(2) }]));
  });
});
