import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyLora } from '../../../nn/lora.js';
import {
  completionLogDistributions,
  lmHeadIsFrozen,
  scoreToArrays,
  type ScoringItem,
} from '../../../nn/score.js';
import { TransformerLM } from '../../../nn/transformer.js';
import { RandomGenerator } from '../../../util/random.js';
import {
  positionChunks,
  ReferenceDistributions,
  type DistributionPair,
} from './reference-distributions.js';

const item = (contextLength: number, completionLength: number): ScoringItem => ({
  context: Array.from({ length: contextLength }, (_, index) => (index * 5 + 1) % 17),
  completion: Array.from({ length: completionLength }, (_, index) => (index * 3 + 2) % 17),
});

describe('positionChunks', () => {
  test('packs consecutive items up to the limit and never splits one', () => {
    const items = [item(2, 3), item(1, 2), item(3, 4), item(1, 1), item(2, 9), item(1, 1)];
    const chunks = positionChunks(items, 5);
    assert.deepEqual(
      chunks.map((chunk) => [chunk.items.length, chunk.start, chunk.positions]),
      [
        [2, 0, 5],
        [2, 5, 5],
        [1, 10, 9],
        [1, 19, 1],
      ],
    );
    assert.deepEqual(
      chunks.flatMap((chunk) => chunk.items),
      items,
    );
    assert.deepEqual(positionChunks([], 5), []);
  });
});

describe('ReferenceDistributions', () => {
  const config = {
    architecture: 'llama' as const,
    vocabSize: 17,
    hiddenSize: 16,
    layers: 2,
    heads: 2,
    kvHeads: 1,
    intermediateSize: 24,
    maxPositions: 32,
  };
  const items = [item(3, 4), item(2, 2), item(5, 3), item(1, 5)];

  function moveParameters(model: TransformerLM): void {
    const random = new RandomGenerator(9);
    for (const { tensor } of model.trainableParameters())
      for (let index = 0; index < tensor.size; index++)
        tensor.data[index]! += 0.05 * random.normal();
  }

  test('chunks recomputed from the copied parameters are π_old; the model keeps π_new', () => {
    const model = new TransformerLM(config, new RandomGenerator(1));
    const before = completionLogDistributions(model, items);
    const reference = new ReferenceDistributions(model, items, 4 * 17 * 5);
    assert.equal(reference.chunks.length, 3);
    moveParameters(model);
    const after = completionLogDistributions(model, items);
    const pairs = [...reference.pairs()];
    const old = new Float32Array(before.length);
    const current = new Float32Array(after.length);
    for (const pair of pairs) {
      old.set(pair.old, pair.chunk.start * 17);
      current.set(pair.current, pair.chunk.start * 17);
    }
    // Per-chunk forward passes may round the last bit differently from the whole batch's.
    const near = (actual: Float32Array, expected: Float32Array, label: string) =>
      expected.forEach((value, index) =>
        assert.ok(Math.abs(actual[index]! - value) <= 1e-5, `${label}[${index}]`),
      );
    near(old, before, 'old');
    near(current, after, 'current');
    assert.ok(after.some((value, index) => Math.abs(value - before[index]!) > 1e-3));
    // Recomputing π_old put π_new's parameters back.
    assert.deepEqual(completionLogDistributions(model, items), after);
  });

  test('within the budget, π_old is the one whole-batch pass, stored', () => {
    const model = new TransformerLM(config, new RandomGenerator(2));
    const before = completionLogDistributions(model, items);
    const reference = new ReferenceDistributions(model, items);
    moveParameters(model);
    const pairs = [...reference.pairs()];
    assert.equal(pairs.length, 1);
    assert.deepEqual(pairs[0]!.old, before);
    assert.deepEqual(pairs[0]!.current, completionLogDistributions(model, items));
  });

  test('with a frozen LM head (LoRA), π_old comes back from the kept hidden states', () => {
    for (const tieEmbeddings of [true, false]) {
      const model = new TransformerLM({ ...config, tieEmbeddings }, new RandomGenerator(3));
      applyLora(model, {
        rank: 2,
        alpha: 4,
        targetModules: ['queryProjection', 'valueProjection'],
        random: new RandomGenerator(4),
      });
      assert.ok(lmHeadIsFrozen(model));
      const before = completionLogDistributions(model, items);
      const reference = new ReferenceDistributions(model, items, 4 * 17 * 5);
      moveParameters(model);
      const after = completionLogDistributions(model, items);
      assert.ok(after.some((value, index) => Math.abs(value - before[index]!) > 1e-3));
      const scored = scoreToArrays(model, items);
      for (const pair of reference.pairs()) {
        const width = pair.chunk.positions * 17;
        const offset = pair.chunk.start * 17;
        // The head alone on fewer rows may round the last bit differently.
        pair.old.forEach((value, index) =>
          assert.ok(Math.abs(value - before[offset + index]!) <= 1e-5, `old[${index}]`),
        );
        assert.equal(pair.old.length, width);
        // The gathered log-probs are scoreToArrays' on the chunk's own items, bit for bit.
        const chunkScores = scoreToArrays(model, pair.chunk.items).flatMap((score) => [
          ...score.logProbs,
        ]);
        assert.deepEqual([...pair.currentLogProbs], chunkScores);
        const whole = scored.flatMap((score) => [...score.logProbs]);
        pair.currentLogProbs.forEach((value, index) =>
          assert.ok(Math.abs(value - whole[pair.chunk.start + index]!) <= 1e-5),
        );
      }
    }
  });

  test('a trainable LM head is not frozen: π_old comes from copied parameters', () => {
    const model = new TransformerLM(config, new RandomGenerator(5));
    assert.equal(lmHeadIsFrozen(model), false);
    const before = completionLogDistributions(model, items);
    const reference = new ReferenceDistributions(model, items, 4 * 17 * 5);
    assert.ok(reference.chunks.length > 1);
    moveParameters(model);
    for (const pair of reference.pairs()) {
      const offset = pair.chunk.start * 17;
      pair.old.forEach((value, index) =>
        assert.ok(Math.abs(value - before[offset + index]!) <= 1e-5, `old[${index}]`),
      );
    }
  });

  test('released pairs hand their buffers to the next measurement, with the same values', () => {
    // 64 entries a position: every chunk's distributions are pooled-size arrays.
    const wide = { ...config, vocabSize: 64 };
    const wideItems = items.map(({ context, completion }) => ({
      context,
      completion: completion.map((token) => (token * 7) % 64),
    }));
    for (const lora of [false, true]) {
      const model = new TransformerLM(wide, new RandomGenerator(6));
      if (lora)
        applyLora(model, {
          rank: 2,
          alpha: 4,
          targetModules: ['queryProjection', 'valueProjection'],
          random: new RandomGenerator(7),
        });
      const reference = new ReferenceDistributions(model, wideItems, 4 * 64 * 8);
      assert.equal(reference.chunks.length, 2);
      moveParameters(model);
      const copies = (pairs: Iterable<DistributionPair>) =>
        [...pairs].map((pair) => [pair.old.slice(), pair.current.slice()]);
      const expected = copies(reference.pairs());
      // Four measurements as the KL meter runs them: each pair released once compared.
      const buffers = new Set<ArrayBufferLike>();
      for (let round = 0; round < 4; round++) {
        let index = 0;
        for (const pair of reference.pairs()) {
          assert.deepEqual([pair.old, pair.current], expected[index], `round ${round}`);
          buffers.add(pair.current.buffer);
          pair.release();
          assert.throws(() => pair.release(), /released twice/);
          index++;
        }
      }
      // New arrays every time would be 8 buffers; reused ones cycle through a few pooled ones.
      assert.ok(buffers.size <= 4, `${buffers.size} buffers held π_current`);
    }
  });
});
