import { generate } from '../nn/generate.js';
import { TransformerLM } from '../nn/transformer.js';
import type { ModelConfigInput } from '../nn/config.js';
import { RandomGenerator } from '../util/random.js';
import { median } from './context.js';
import type { BenchmarkResult } from './workloads.js';

export interface Bfloat16DecodeBenchmarkOptions {
  /** The model's shape (random weights); the real-model bench passes SmolLM2-135M's. */
  config: ModelConfigInput;
  /** Prefix of the figures' names, e.g. `smollm2-135m-shape`. */
  name: string;
  /** Timed runs per precision (the median is reported). @default 3 */
  repeats?: number;
  /** Untimed runs of each precision first. @default 1 */
  warmup?: number;
  /** Prompt tokens. @default 32 */
  promptTokens?: number;
  /** Sampled tokens. @default 32 */
  newTokens?: number;
}

/**
 * Batch-1 decoding with the same random weights in float32 and with the frozen matrices stored
 * in bfloat16, timed in the same process with the runs interleaved (f32, bf16, f32, …) so that
 * load from other processes hits both alike. Decoding one token reads every weight once, so it
 * is bound by memory bandwidth and bfloat16 weights (half the bytes) should approach twice the
 * speed. As in the real-model generation workload, decode time is the time of a call sampling
 * `newTokens` + 1 tokens minus that of a call sampling 1 (the prompt pass, compute-bound, is
 * in both), over `newTokens` tokens; `…-generate-…` figures are the whole call. Returns both
 * precisions' figures and `…-bf16-over-f32`, the ratios of the medians.
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
  const times = timeInterleavedDecodes(single, half, { prompts, newTokens, warmup, repeats });
  single.destroy();
  half.destroy();
  return decodeFigures(options.name, times, newTokens);
}

/** Seconds of every timed run of one precision: whole calls, and whole minus the prompt pass. */
interface DecodeTimes {
  whole: number[];
  decode: number[];
}

/**
 * Times `warmup` + `repeats` rounds, each a call sampling 1 token then one sampling
 * `newTokens` + 1 of `single`, then the same of `half`, keeping the rounds after the warm-up.
 */
function timeInterleavedDecodes(
  single: TransformerLM,
  half: TransformerLM,
  run: { prompts: number[][]; newTokens: number; warmup: number; repeats: number },
): { single: DecodeTimes; half: DecodeTimes } {
  const { prompts, newTokens, warmup, repeats } = run;
  const secondsOf = (model: TransformerLM, maxNewTokens: number): number => {
    const start = process.hrtime.bigint();
    generate(model, {
      prompts,
      maxNewTokens,
      random: new RandomGenerator('bf16-decode-sampling'),
      temperature: 1,
    });
    return Number(process.hrtime.bigint() - start) / 1e9;
  };
  const times = {
    single: { whole: [] as number[], decode: [] as number[] },
    half: { whole: [] as number[], decode: [] as number[] },
  };
  for (let round = 0; round < warmup + repeats; round++) {
    for (const [model, into] of [
      [single, times.single],
      [half, times.half],
    ] as const) {
      const prefill = secondsOf(model, 1);
      const whole = secondsOf(model, newTokens + 1);
      if (round < warmup) continue;
      into.whole.push(whole);
      into.decode.push(whole - prefill);
    }
  }
  return times;
}

/** Both precisions' decode and generate rates (of the medians) and their bf16-over-f32 ratios. */
function decodeFigures(
  prefix: string,
  times: { single: DecodeTimes; half: DecodeTimes },
  newTokens: number,
): BenchmarkResult[] {
  const rates = (into: DecodeTimes) => ({
    generate: (newTokens + 1) / median(into.whole),
    decode: newTokens / median(into.decode),
  });
  const singleRates = rates(times.single);
  const halfRates = rates(times.half);
  return [
    { name: `${prefix}-decode-batch1-f32`, value: singleRates.decode, unit: 'tokens/s' },
    { name: `${prefix}-decode-batch1-bf16`, value: halfRates.decode, unit: 'tokens/s' },
    {
      name: `${prefix}-decode-batch1-bf16-over-f32`,
      value: halfRates.decode / singleRates.decode,
      unit: 'x',
    },
    { name: `${prefix}-generate-batch1-f32`, value: singleRates.generate, unit: 'tokens/s' },
    { name: `${prefix}-generate-batch1-bf16`, value: halfRates.generate, unit: 'tokens/s' },
    {
      name: `${prefix}-generate-batch1-bf16-over-f32`,
      value: halfRates.generate / singleRates.generate,
      unit: 'x',
    },
  ];
}
