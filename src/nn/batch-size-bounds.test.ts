import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { offPolicyImprovementEstimate } from '../rl/improvement.js';
import { LocalPolicy } from '../team/policy.js';
import { CharTokenizer } from '../tokenizer/char.js';
import { runBounded } from '../util/test-support/bounded-child.js';
import { RandomGenerator } from '../util/random.js';
import { generate } from './generate.js';
import { resolveModelConfig } from './config.js';
import { KeyValueCache } from './kv-cache.js';
import { planSampling, samplingBudgetBytes } from './sampling-plan.js';
import { planSharedPrefix } from './shared-prefix.js';
import { TransformerLM } from './transformer.js';

/**
 * The batch sizes the training schema allows (rollout.problemsPerBatch up to 100,000,
 * rollout.groupSize up to 4,096, their product up to 1,000,000; certificate.heldOutProblems up
 * to 100,000) reach these functions as array lengths. At those sizes they must not spread the
 * rows into one call (a stack overflow past ~100,000 arguments) nor allocate rows² of anything.
 */
const rolloutRows = [20_000 * 4, 100_000 * 2, 1_000_000];

describe('code sized by a batch survives the schema maxima', () => {
  test('planSharedPrefix makes no rows² table past its row limit (80,000 rows died here)', async () => {
    const planner = JSON.stringify(new URL('./shared-prefix.ts', import.meta.url).href);
    const result = await runBounded({
      setup: `const { planSharedPrefix } = await import(${planner});`,
      body: `for (const rows of ${JSON.stringify(rolloutRows)}) { const prompts = Array.from({ length: rows }, (_, row) => [1, 2, 3, row % 5]); console.log(rows, planSharedPrefix(prompts, 4)); }`,
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
    assert.deepEqual(
      result.stdout.trim().split('\n'),
      rolloutRows.map((rows) => `${rows} null`),
    );
    assert.ok(result.peakRssBytes < 2 ** 30);
    const small = Array.from({ length: 64 }, (_, row) => [1, 2, 3, 4, row % 5]);
    assert.notEqual(planSharedPrefix(small, 5), null, 'small batches still share their prefix');
  });

  test('generate and a policy take a million prompts without a stack overflow', async () => {
    const tokenizer = new CharTokenizer({ alphabet: 'ab' });
    const model = new TransformerLM(
      {
        architecture: 'llama',
        vocabSize: tokenizer.vocabSize,
        hiddenSize: 8,
        layers: 1,
        heads: 2,
        intermediateSize: 8,
        maxPositions: 8,
      },
      new RandomGenerator(0),
    );
    try {
      const prompts = Array.from({ length: 1_000_000 }, () => [1]);
      const random = prompts.map(() => new RandomGenerator(1));
      assert.equal(generate(model, { prompts, maxNewTokens: 0, random }).length, 1_000_000);
      const policy = new LocalPolicy(model, tokenizer);
      const requests = Array.from({ length: 200_000 }, () => ({ input: 'ab', random: random[0]! }));
      const completions = await policy.complete(requests, { maxNewTokens: 0 });
      assert.equal(completions.length, 200_000);
    } finally {
      model.destroy();
    }
  });

  test('a key/value cache too large for memory is refused before it is allocated, naming the settings', () => {
    const config = resolveModelConfig({
      architecture: 'llama',
      vocabSize: 4,
      hiddenSize: 8,
      layers: 1,
      heads: 2,
      intermediateSize: 8,
      maxPositions: 64,
    });
    const refused =
      /key\/value cache of .* sequences .*rollout\.problemsPerBatch × rollout\.groupSize/s;
    // One array past what a typed array holds (100,000,000 rows × 64 positions × 8).
    assert.throws(() => new KeyValueCache(config, 100_000_000, 64), refused);
    const previous = process.env.TEAMTR_MEMORY_SHARE;
    process.env.TEAMTR_MEMORY_SHARE = '0.000001';
    try {
      // 80,000 rows (the schema's 20,000 prompts × 4) past a memory share set small.
      assert.throws(() => new KeyValueCache(config, 80_000, 64), /TEAMTR_MEMORY_SHARE/);
    } finally {
      if (previous === undefined) delete process.env.TEAMTR_MEMORY_SHARE;
      else process.env.TEAMTR_MEMORY_SHARE = previous;
    }
    const fits = new KeyValueCache(config, 4, 64);
    fits.destroy();
  });

  test("sampling the schema's largest batches plans a peak set by the chunk, within the budget", () => {
    const demo = resolveModelConfig(
      JSON.parse(
        readFileSync(
          new URL('../../models/arithmetic-chain/role-0/config.json', import.meta.url),
          'utf8',
        ),
      ),
    );
    const smolLM2 = resolveModelConfig({
      architecture: 'llama',
      vocabSize: 49_152,
      hiddenSize: 576,
      layers: 30,
      heads: 9,
      kvHeads: 3,
      intermediateSize: 1_536,
      maxPositions: 8_192,
    });
    const budget = samplingBudgetBytes();
    assert.ok(budget <= 2 ** 30, 'the default budget is 1 GiB at most');
    for (const [model, promptLength, maxNewTokens] of [
      [demo, 64, 32],
      [smolLM2, 512, 256],
    ] as const)
      for (const rows of rolloutRows) {
        const shape = { rows, promptLength, maxNewTokens, prefillChunkPositions: 4096 };
        const plan = planSampling(model, { ...shape, keepHiddenStates: false });
        const label = `${model.hiddenSize}-wide model, ${rows} rows`;
        assert.ok(plan.rowsPerChunk >= 1 && plan.rowsPerChunk < rows, label);
        assert.equal(plan.chunks, Math.ceil(rows / plan.rowsPerChunk));
        // One pass would need gigabytes (80,000 demo rows: about 9 GB); a chunk stays in budget.
        assert.ok(rows * plan.bytesPerRow > 4 * budget, label);
        assert.ok(plan.chunkBytes <= budget, `${label}: ${plan.chunkBytes} bytes a chunk`);
      }
  });

  test("the schema's 20,000 × 4 batch is sampled a chunk at a time, under 1 GiB", async () => {
    const modules = [
      './generate.ts',
      './transformer.ts',
      '../util/random.ts',
      './sampling-plan.ts',
    ];
    const [generateModule, transformer, random, plan] = modules.map((file) =>
      JSON.stringify(new URL(file, import.meta.url).href),
    );
    // The demo's model shape; 80,000 one-token prompts with room for 95 tokens each (their
    // keys and values alone are 3.9 GB: one pass reached 1.8 GB resident by its first token).
    // A small budget, so that the first chunk ends in the time allowed; stopped at the first
    // token of the second chunk, by which every row of the first has all its tokens.
    const result = await runBounded({
      env: { TEAMTR_SAMPLING_MEMORY_MIB: '64' },
      setup: [
        `const { generate } = await import(${generateModule});`,
        `const { TransformerLM } = await import(${transformer});`,
        `const { RandomGenerator } = await import(${random});`,
        `const { planSampling } = await import(${plan});`,
        `const model = new TransformerLM({ architecture: 'llama', vocabSize: 100, hiddenSize: 64, layers: 2, heads: 4, kvHeads: 2, intermediateSize: 160, maxPositions: 96 }, new RandomGenerator(0));`,
        `model.setTrainable(false);`,
        `const prompts = Array.from({ length: 80_000 }, (_, row) => [1 + (row % 99)]);`,
        `const random = prompts.map((_, row) => new RandomGenerator(row));`,
        `const { rowsPerChunk } = planSampling(model.config, { rows: 80_000, promptLength: 1, maxNewTokens: 95, prefillChunkPositions: 4096, keepHiddenStates: false });`,
      ].join('\n'),
      body: [
        `let tokens = 0;`,
        `const onToken = (row) => { if (row >= rowsPerChunk) throw new Error('second chunk'); tokens++; };`,
        `try { generate(model, { prompts, maxNewTokens: 95, random, onToken }); }`,
        `catch (error) { console.log(rowsPerChunk, tokens, error.message); }`,
      ].join('\n'),
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}: ${result.stderr}`);
    const [rowsPerChunk, tokens, ...reason] = result.stdout.trim().split(' ');
    assert.equal(reason.join(' '), 'second chunk');
    assert.ok(Number(rowsPerChunk) > 100 && Number(rowsPerChunk) < 80_000, rowsPerChunk);
    assert.equal(Number(tokens), Number(rowsPerChunk) * 95);
    assert.ok(result.peakRssBytes < 2 ** 30);
  });

  test('the held-out improvement estimate takes 400,000 rows', () => {
    const rows = 400_000;
    const estimate = offPolicyImprovementEstimate({
      logProbs: new Float64Array(rows),
      oldLogProbs: new Float64Array(rows),
      mask: new Float64Array(rows).fill(1),
      rows,
      rewards: new Float64Array(rows).fill(1),
      baseline: 0.5,
    });
    assert.equal(estimate.metrics.effectiveSampleSize, rows);
  });
});
