import { generate } from '../nn/generate.js';
import { TransformerLM } from '../nn/transformer.js';
import type { ModelConfigInput } from '../nn/config.js';
import { RandomGenerator } from '../util/random.js';
import type { BenchmarkResult } from './workloads.js';

export interface Bfloat16DecodeBenchmarkOptions {
  /** The model's shape (random weights); the real-model bench passes SmolLM2-135M's. */
  config: ModelConfigInput;
  /** Timed runs per precision (the median is reported). @default 3 */
  repeats?: number;
  /** Untimed runs of each precision first. @default 1 */
  warmup?: number;
  /** Prompt tokens. @default 32 */
  promptTokens?: number;
  /** Sampled tokens. @default 32 */
  newTokens?: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * Batch-1 generation (prompt, then token-by-token decoding with the KV cache) with the same
 * random weights in float32 and with the frozen matrices stored in bfloat16, timed in the same
 * process with the runs interleaved (f32, bf16, f32, …) so that load from other processes hits
 * both alike. Decoding one token reads every weight once, so it is bound by memory bandwidth
 * and bfloat16 weights (half the bytes) should approach twice the speed. Returns both
 * throughputs and `…-bf16-over-f32`, the ratio of the two medians.
 */
export function benchmarkBfloat16Decode(
  options: Bfloat16DecodeBenchmarkOptions,
): BenchmarkResult[] {
  const repeats = options.repeats ?? 3;
  const warmup = options.warmup ?? 1;
  const promptTokens = options.promptTokens ?? 32;
  const newTokens = options.newTokens ?? 32;
  const single = new TransformerLM(options.config, new RandomGenerator('bf16-decode-weights'));
  const half = new TransformerLM(options.config, new RandomGenerator('bf16-decode-weights'));
  half.setTrainable(false);
  half.storeFrozenWeightsAsBfloat16();
  const prompt = new RandomGenerator('bf16-decode-prompt');
  const prompts = [
    Array.from({ length: promptTokens }, () => prompt.nextInt(single.config.vocabSize)),
  ];
  const secondsOf = (model: TransformerLM): number => {
    const start = process.hrtime.bigint();
    generate(model, {
      prompts,
      maxNewTokens: newTokens,
      random: new RandomGenerator('bf16-decode-sampling'),
      temperature: 1,
    });
    return Number(process.hrtime.bigint() - start) / 1e9;
  };
  const times = { single: [] as number[], half: [] as number[] };
  for (let run = 0; run < warmup + repeats; run++) {
    const singleSeconds = secondsOf(single);
    const halfSeconds = secondsOf(half);
    if (run < warmup) continue;
    times.single.push(singleSeconds);
    times.half.push(halfSeconds);
  }
  single.destroy();
  half.destroy();
  const singleRate = newTokens / median(times.single);
  const halfRate = newTokens / median(times.half);
  return [
    { name: 'generate-batch1-f32', value: singleRate, unit: 'tokens/s' },
    { name: 'generate-batch1-bf16', value: halfRate, unit: 'tokens/s' },
    { name: 'generate-batch1-bf16-over-f32', value: halfRate / singleRate, unit: '×' },
  ];
}
