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

/** Generation (batch 1 and 8) and LoRA training throughput at SmolLM2-135M's shape. */
export function benchmarkSmolLMShape(options: RealModelBenchmarkOptions = {}): BenchmarkResult[] {
  const settings = { repeats: options.repeats ?? 3, warmup: options.warmup ?? 1 };
  const model = new TransformerLM(smolLM2Shape, new RandomGenerator('smollm2-135m-shape'));
  try {
    return [
      { name: 'smollm2-135m-shape-parameters', value: model.parameterCount() / 1e6, unit: 'M' },
      generationThroughput(model, 1, settings),
      generationThroughput(model, 8, settings),
      loraStepThroughput(model, settings),
    ];
  } finally {
    model.destroy();
  }
}
