import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { allocate, clearPool, memoryStatistics, release } from '../tensor/index.js';
import { forEachBackend } from '../tensor/test-support/gradient-check.js';
import { RandomGenerator } from '../util/random.js';
import { resolveModelConfig } from './config.js';
import { generate } from './generate.js';
import { TransformerLM } from './transformer.js';
import { tinyLlamaConfig } from './test-support/tiny-llama.js';

const config = resolveModelConfig(tinyLlamaConfig);

/** Prompts of several lengths (left padding) and a group sharing one (a shared prefix). */
function prompts(random: RandomGenerator): number[][] {
  const prompt = (length: number) =>
    Array.from({ length }, () => 1 + random.nextInt(config.vocabSize - 1));
  const shared = prompt(9);
  return [prompt(3), shared, [...shared], [...shared], prompt(14), prompt(1)];
}

describe('key/value cache', () => {
  test('takes pooled buffers and reads no slot before writing it', () => {
    forEachBackend((backend) => {
      const model = new TransformerLM(tinyLlamaConfig, new RandomGenerator('kv-cache'));
      const batch = prompts(new RandomGenerator('prompts'));
      const run = () =>
        generate(model, {
          prompts: batch,
          maxNewTokens: 50,
          random: batch.map((_, row) => new RandomGenerator(`row ${row}`)),
        });
      clearPool();
      const clean = run();
      // The cache went back to the pool: 2 arrays a layer of [batch, capacity, kvHeads·headDim],
      // a size class of their own (larger than any activation of this model).
      const cacheLength = batch.length * (14 + 50) * config.kvHeads * config.headDim;
      const fresh = memoryStatistics().freshBytes;
      const reused = Array.from({ length: 2 * config.layers }, () => allocate(cacheLength));
      assert.equal(
        memoryStatistics().freshBytes,
        fresh,
        `${backend}: the cache's buffers are pooled`,
      );
      for (const buffer of reused) release(buffer);
      // Every pooled buffer of the cache's size now holds NaN: a slot read before it is written
      // would turn a log-prob into NaN.
      const dirty = Array.from({ length: 4 * config.layers }, () =>
        allocate(cacheLength).fill(Number.NaN),
      );
      for (const buffer of dirty) release(buffer);
      assert.deepEqual(run(), clean, `${backend}: the same tokens and log-probs`);
      model.destroy();
      clearPool();
    });
  });
});
