import { generate } from '../nn/generate.js';
import { scoreCompletions } from '../nn/score.js';
import { TransformerLM } from '../nn/transformer.js';
import type { ModelConfigInput } from '../nn/config.js';
import { AdamW } from '../optim/adamw.js';
import { crossEntropy, noGrad, tidy } from '../tensor/index.js';
import { RandomGenerator } from '../util/random.js';
import { medianSeconds, type BenchmarkResult } from './context.js';

/**
 * The reference workloads of `teamtr bench` (issue: the engine). pytorch/torch_reference.py
 * times the same three in PyTorch with the same shapes, so the ratios compare like with like.
 */
export const llama3mConfig: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 128,
  hiddenSize: 256,
  layers: 4,
  heads: 4,
  kvHeads: 4,
  intermediateSize: 704,
  maxPositions: 256,
  ropeTheta: 10000,
  normEpsilon: 1e-5,
  tieEmbeddings: false,
};

export type { BenchmarkResult } from './context.js';

function randomIds(random: RandomGenerator, count: number, vocab: number): Int32Array {
  return Int32Array.from({ length: count }, () => random.nextInt(vocab));
}

/** Forward, cross-entropy, backward and AdamW on 16 × 128 random ids. */
export function benchmarkTrainStep(options: { repeats: number; warmup: number }): BenchmarkResult {
  const random = new RandomGenerator(0);
  const model = new TransformerLM(llama3mConfig, random);
  const optimizer = new AdamW(model.trainableParameters(), {
    learningRate: 3e-4,
    beta1: 0.9,
    beta2: 0.95,
    epsilon: 1e-8,
    weightDecay: 0.1,
  });
  const [batch, length] = [16, 128];
  const ids = randomIds(random, batch * length, 128);
  const targets = randomIds(random, batch * length, 128);
  const seconds = medianSeconds(
    () => {
      tidy(() => {
        const loss = crossEntropy(model.forward({ ids, batch, length }), targets);
        loss.backward();
      });
      optimizer.update();
      optimizer.zeroGrad();
    },
    options.warmup,
    options.repeats,
  );
  model.destroy();
  return { name: 'llama-3m-train-step', value: (batch * length) / seconds, unit: 'tokens/s' };
}

/** 64 new tokens for 16 sequences from 16-token prompts, KV cache, multinomial at T = 1. */
export function benchmarkGenerate(options: { repeats: number; warmup: number }): BenchmarkResult {
  const random = new RandomGenerator(1);
  const model = new TransformerLM(llama3mConfig, random);
  const prompts = Array.from({ length: 16 }, () => Array.from(randomIds(random, 16, 128)));
  const seconds = medianSeconds(
    () => {
      generate(model, { prompts, maxNewTokens: 64, random, temperature: 1 });
    },
    options.warmup,
    options.repeats,
  );
  model.destroy();
  return { name: 'llama-3m-generate', value: (16 * 64) / seconds, unit: 'tokens/s' };
}

/** No-grad log-probs of 16 × 128 tokens (one BOS-like context token each). */
export function benchmarkScore(options: { repeats: number; warmup: number }): BenchmarkResult {
  const random = new RandomGenerator(2);
  const model = new TransformerLM(llama3mConfig, random);
  const items = Array.from({ length: 16 }, () => ({
    context: [0],
    completion: Array.from(randomIds(random, 127, 128)),
  }));
  const seconds = medianSeconds(
    () => {
      noGrad(() => tidy(() => scoreCompletions(model, items).logProbs.data[0]));
    },
    options.warmup,
    options.repeats,
  );
  model.destroy();
  return { name: 'llama-3m-score', value: (16 * 128) / seconds, unit: 'tokens/s' };
}
