import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RandomGenerator } from '../util/random.js';
import { ShapeError } from '../util/errors.js';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { generate } from './generate.js';
import { scoreToArrays } from './score.js';
import { TransformerLM } from './transformer.js';
import { tinyLlamaConfig } from './test-support/tiny-llama.js';

const config = tinyLlamaConfig;

/** Prompts of different lengths (left padding inside every chunk boundary case). */
function prompts(random: RandomGenerator): number[][] {
  return [23, 9, 1, 17, 30].map((length) =>
    Array.from({ length }, () => 1 + random.nextInt(config.vocabSize - 1)),
  );
}

test('a prompt prefilled in chunks samples what one pass samples, with the same log-probs', () => {
  forEachBackend((backendName) => {
    const model = new TransformerLM(config, new RandomGenerator(5));
    const batch = prompts(new RandomGenerator(6));
    const run = (prefillChunkPositions: number) =>
      generate(model, {
        prompts: batch,
        maxNewTokens: 6,
        random: batch.map((_prompt, row) => new RandomGenerator(`row-${row}`)),
        prefillChunkPositions,
      });
    const onePass = run(10_000);
    // 5 rows × 3 slots: ten chunks of three slots, the last of the 30 slots sampled from.
    for (const chunked of [run(15), run(7), run(1)]) {
      chunked.forEach((sequence, row) => {
        assert.deepEqual(sequence.tokens, onePass[row]!.tokens, `${backendName} row ${row}`);
        sequence.logProbs.forEach((logProb, position) =>
          assert.ok(
            Math.abs(logProb - onePass[row]!.logProbs[position]!) < 1e-5,
            `${backendName} row ${row} token ${position}: ${logProb} vs ${onePass[row]!.logProbs[position]}`,
          ),
        );
      });
    }
    // And what was sampled after a chunked prefill is what scoring the sequence gives.
    const scores = scoreToArrays(
      model,
      batch.map((context, row) => ({ context, completion: onePass[row]!.tokens })),
    );
    run(7).forEach((sequence, row) =>
      sequence.logProbs.forEach((logProb, position) =>
        assert.ok(Math.abs(logProb - scores[row]!.logProbs[position]!) < 1e-5),
      ),
    );
    model.destroy();
  });
});

test('prefillChunkPositions must be a positive integer', () => {
  const model = new TransformerLM(config, new RandomGenerator(1));
  for (const value of [0, -4, 2.5, Number.NaN])
    assert.throws(
      () =>
        generate(model, {
          prompts: [[1, 2]],
          maxNewTokens: 1,
          random: new RandomGenerator(1),
          prefillChunkPositions: value,
        }),
      (error: unknown) =>
        error instanceof ShapeError &&
        /prefillChunkPositions must be a positive integer/.test(error.message),
    );
  model.destroy();
});
