import { benchmarkSgemm } from '../backend/benchmark.js';
import { getBackend } from '../backend/index.js';
import { applyLora } from '../nn/lora.js';
import type { ModelConfigInput } from '../nn/config.js';
import { generate } from '../nn/generate.js';
import { TransformerLM } from '../nn/transformer.js';
import { AdamW } from '../optim/adamw.js';
import { crossEntropy, tidy } from '../tensor/index.js';
import { RandomGenerator } from '../util/random.js';
import type { BenchmarkResult } from './workloads.js';

/**
 * A real small model's cost on this machine: random weights with the exact shape of
 * SmolLM2-135M (Llama architecture, 30 layers, d_model 576, 9 heads with 3 KV heads, MLP 1536,
 * vocabulary 49152, tied embeddings), so the numbers are what a Hugging Face checkpoint of that
 * size costs without downloading one.
 */
export const smolLM2Shape: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 49152,
  hiddenSize: 576,
  layers: 30,
  heads: 9,
  kvHeads: 3,
  intermediateSize: 1536,
  maxPositions: 2048,
  ropeTheta: 100000,
  normEpsilon: 1e-5,
  tieEmbeddings: true,
};

export interface RealModelBenchmarkOptions {
  /** Timed runs per workload (the median is reported). @default 3 */
  repeats?: number;
  /** Untimed runs first. @default 1 */
  warmup?: number;
}

/** Median seconds of `repeats` timed runs after `warmup` untimed ones. */
function medianSeconds(run: () => void, warmup: number, repeats: number): number {
  for (let index = 0; index < warmup; index++) run();
  const times: number[] = [];
  for (let index = 0; index < repeats; index++) {
    const start = process.hrtime.bigint();
    run();
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  times.sort((left, right) => left - right);
  const middle = Math.floor(times.length / 2);
  return times.length % 2 ? times[middle]! : (times[middle - 1]! + times[middle]!) / 2;
}

function randomIds(random: RandomGenerator, count: number): number[] {
  return Array.from({ length: count }, () => random.nextInt(smolLM2Shape.vocabSize));
}

/** Sampled tokens per second: `batch` prompts of 32 tokens, 32 new tokens each, KV cache. */
function generationThroughput(
  model: TransformerLM,
  batch: number,
  options: Required<RealModelBenchmarkOptions>,
): BenchmarkResult {
  const random = new RandomGenerator(`smollm2-generate-${batch}`);
  const prompts = Array.from({ length: batch }, () => randomIds(random, 32));
  const newTokens = 32;
  const seconds = medianSeconds(
    () => {
      generate(model, { prompts, maxNewTokens: newTokens, random, temperature: 1 });
    },
    options.warmup,
    options.repeats,
  );
  return {
    name: `smollm2-135m-shape-generate-batch${batch}`,
    value: (batch * newTokens) / seconds,
    unit: 'tokens/s',
  };
}

/**
 * Trained tokens per second of one LoRA step (rank 8 on the query and value projections,
 * PEFT's default targets): forward, next-token cross-entropy, backward and AdamW on the
 * adapters, on 4 sequences of 128 tokens.
 */
function loraStepThroughput(
  model: TransformerLM,
  options: Required<RealModelBenchmarkOptions>,
): BenchmarkResult {
  const random = new RandomGenerator('smollm2-lora');
  applyLora(model, {
    rank: 8,
    alpha: 16,
    targetModules: ['queryProjection', 'valueProjection'],
    random,
  });
  const optimizer = new AdamW(model.trainableParameters(), {
    learningRate: 1e-4,
    beta1: 0.9,
    beta2: 0.999,
    epsilon: 1e-8,
    weightDecay: 0,
  });
  const [batch, length] = [4, 128];
  const ids = Int32Array.from(randomIds(random, batch * length));
  const targets = Int32Array.from(randomIds(random, batch * length));
  const seconds = medianSeconds(
    () => {
      tidy(() => crossEntropy(model.forward({ ids, batch, length }), targets).backward());
      optimizer.update();
      optimizer.zeroGrad();
    },
    options.warmup,
    options.repeats,
  );
  return {
    name: 'smollm2-135m-shape-lora-train-step',
    value: (batch * length) / seconds,
    unit: 'tokens/s',
  };
}

/**
 * The products of one decode step at rollout batch size (64 rows) against SmolLM2's weights,
 * stored [out, in] and used transposed: query/output, key/value, gate/up, down and the tied LM
 * head (`-bt`: B transposed, read in place). Each is reported in GFLOP/s and as a fraction of
 * the same run's 4096×1024×1024 sgemm (`-of-sgemm4096`), the machine's bound as our own kernels
 * reach it, so the ratio survives a noisy machine.
 */
function decodeProducts(): BenchmarkResult[] {
  const backend = getBackend();
  const bound = benchmarkSgemm(backend, { m: 4096, n: 1024, k: 1024, minimumSeconds: 1 });
  const results: BenchmarkResult[] = [];
  for (const [n, k] of [
    [576, 576],
    [192, 576],
    [1536, 576],
    [576, 1536],
    [49152, 576],
  ] as const) {
    const rate = benchmarkSgemm(backend, { m: 64, n, k, transposeB: true, minimumSeconds: 0.5 });
    const name = `smollm2-decode-64x${n}x${k}-bt`;
    results.push({ name, value: rate, unit: 'GFLOP/s' });
    results.push({ name: `${name}-of-sgemm4096`, value: rate / bound, unit: 'x' });
  }
  return results;
}

/**
 * Generation (batch 1, 8 and 64, the rollout size), the products of a decode step, and LoRA
 * training throughput at SmolLM2-135M's shape.
 */
export function benchmarkSmolLMShape(options: RealModelBenchmarkOptions = {}): BenchmarkResult[] {
  const settings = { repeats: options.repeats ?? 3, warmup: options.warmup ?? 1 };
  const model = new TransformerLM(smolLM2Shape, new RandomGenerator('smollm2-135m-shape'));
  try {
    return [
      { name: 'smollm2-135m-shape-parameters', value: model.parameterCount() / 1e6, unit: 'M' },
      generationThroughput(model, 1, settings),
      generationThroughput(model, 8, settings),
      generationThroughput(model, 64, settings),
      ...decodeProducts(),
      loraStepThroughput(model, settings),
    ];
  } finally {
    model.destroy();
  }
}
