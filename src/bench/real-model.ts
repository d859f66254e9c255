import { benchmarkSgemm } from './timing.js';
import { getBackend, setBackend } from '../backend/index.js';
import { applyLora } from '../nn/lora.js';
import type { ModelConfigInput } from '../nn/config.js';
import { generate } from '../nn/generate.js';
import { TransformerLM } from '../nn/transformer.js';
import { AdamW } from '../optim/adamw.js';
import { crossEntropy, tidy } from '../tensor/index.js';
import { RandomGenerator } from '../util/random.js';
import {
  medianSeconds,
  recordTimeSplit,
  timePrefillAndTotal,
  type Workload,
  type WorkloadContext,
  type WorkloadFigure,
} from './context.js';
import {
  forwardFlopsPerToken,
  loraStepFlopsPerToken,
  prefillFlops,
  throughput,
  type LoraShape,
} from './flops.js';
import { measureTimeSplitSync, splitDifference, type TimeSplit } from './time-split.js';

/**
 * A real small model's cost on this machine: random weights with the exact shape of
 * SmolLM2-135M (Llama architecture, 30 layers, d_model 576, 9 heads with 3 KV heads, MLP 1536,
 * vocabulary 49152, tied embeddings), so the numbers are what a Hugging Face checkpoint of that
 * size costs without downloading one. src/bench/pytorch/torch_real_model.py runs the same workloads in
 * PyTorch under the same names.
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

/** PEFT's default LoRA targets for Llama, the adapters a TeamTR LoRA agent trains. */
export const smolLM2Lora: LoraShape & { alpha: number } = {
  rank: 8,
  alpha: 16,
  targetModules: ['queryProjection', 'valueProjection'],
};

/**
 * A real model's shape for the real-model workloads: the config (random weights), the LoRA
 * adapters the team's agents train, how the frozen weights are stored, and the prefix of the
 * figures' names.
 */
export interface RealModelShape {
  name: string;
  config: ModelConfigInput;
  lora: LoraShape & { alpha: number };
  /** `bfloat16`: the frozen weights kept in bfloat16 (half the memory and the bytes a decode step reads). */
  frozenWeights: 'float32' | 'bfloat16';
}

export const smolLM2: RealModelShape = {
  name: 'smollm2-135m-shape',
  config: smolLM2Shape,
  lora: smolLM2Lora,
  frozenWeights: 'float32',
};

/**
 * Qwen2.5-1.5B's shape (the seed's smallest agents): Llama architecture with biased query, key
 * and value projections, 28 layers, d_model 1536, 12 heads with 2 KV heads, MLP 8960,
 * vocabulary 151,936, tied embeddings; positions capped at 4096 (the workloads use far fewer,
 * and the RoPE tables stay small). Its frozen weights in bfloat16: 3.1 GB where float32 would
 * take 6.2, as a team's shared base would be kept.
 */
export const qwen25OnePointFiveB: RealModelShape = {
  name: 'qwen2.5-1.5b-shape',
  config: {
    architecture: 'llama',
    vocabSize: 151936,
    hiddenSize: 1536,
    layers: 28,
    heads: 12,
    kvHeads: 2,
    intermediateSize: 8960,
    maxPositions: 4096,
    ropeTheta: 1000000,
    normEpsilon: 1e-6,
    attentionBias: true,
    tieEmbeddings: true,
  },
  lora: smolLM2Lora,
  frozenWeights: 'bfloat16',
};

/** The shapes by name (the figures' prefix). */
export const realModelShapes: Readonly<Record<string, RealModelShape>> = {
  [smolLM2.name]: smolLM2,
  [qwen25OnePointFiveB.name]: qwen25OnePointFiveB,
};

const promptTokens = 32;
const newTokens = 32;

/**
 * Runs `measure` on a fresh random model of `shape` (its frozen weights in the shape's storage
 * once `prepare` — e.g. adding LoRA adapters — has run) and frees it afterwards.
 */
export function withModel<T>(
  shape: RealModelShape,
  seed: string,
  measure: (model: TransformerLM) => T,
  prepare: (model: TransformerLM) => void = () => {},
): T {
  const model = new TransformerLM(shape.config, new RandomGenerator(seed));
  try {
    prepare(model);
    if (shape.frozenWeights === 'bfloat16') {
      if (model.trainableParameters().length === model.namedParameters().length)
        model.setTrainable(false);
      model.storeFrozenWeightsAsBfloat16();
    }
    return measure(model);
  } finally {
    model.destroy();
  }
}

/** Runs `measure` on a fresh random model of SmolLM2's shape and frees it afterwards. */
export function withSmolLM2<T>(seed: string, measure: (model: TransformerLM) => T): T {
  return withModel(smolLM2, seed, measure);
}

function randomIds(random: RandomGenerator, count: number, vocabSize: number): number[] {
  return Array.from({ length: count }, () => random.nextInt(vocabSize));
}

/**
 * Median seconds of the engine's own `generate` (KV cache, multinomial at temperature 1) for
 * `batch` prompts of 32 tokens, producing 1 new token (`prefill`: the prompt pass, which samples
 * the first token) and 32 (`total`). Timing `generate` itself, not a copy of its loop, keeps the
 * figures honest as it changes. The two lengths alternate within each repeat, so a change of
 * load on a shared machine hits both.
 */
function timeGeneration(
  model: TransformerLM,
  batch: number,
  context: WorkloadContext,
): { prefill: number; total: number } {
  const { random, prompts } = generationPrompts(model, batch);
  const seconds = (maxNewTokens: number): number => {
    const start = process.hrtime.bigint();
    generate(model, { prompts, maxNewTokens, random, temperature: 1 });
    return Number(process.hrtime.bigint() - start) / 1e9;
  };
  // A whole generation is 10+ s at batch 64, so warm-ups are prompt passes only.
  return timePrefillAndTotal(seconds, newTokens, context);
}

/** `batch` random prompts of 32 tokens, and the generator that made them (it samples on). */
function generationPrompts(
  model: TransformerLM,
  batch: number,
): { random: RandomGenerator; prompts: number[][] } {
  const random = new RandomGenerator(`smollm2-generate-${batch}`);
  const prompts = Array.from({ length: batch }, () =>
    randomIds(random, promptTokens, model.config.vocabSize),
  );
  return { random, prompts };
}

/**
 * Where one more generation's time goes, apart from the timed ones: the prompt pass (1 new
 * token) and the 31 decode steps after it (32 new tokens less 1), each a time split.
 */
function recordGenerationSplits(model: TransformerLM, batch: number, name: string): void {
  const { random, prompts } = generationPrompts(model, batch);
  const split = (maxNewTokens: number) =>
    timedStep(() => generate(model, { prompts, maxNewTokens, random, temperature: 1 }), {
      cpu: false,
    });
  const prefill = split(1);
  recordTimeSplit(`${name}-prefill-batch${batch}`, prefill);
  recordTimeSplit(`${name}-decode-batch${batch}`, splitDifference(split(newTokens), prefill));
}

/**
 * Generation at one batch size, in three figures, each with its fraction of the bound:
 * - prefill: prompt tokens per second of the prompt pass (1 new token generated);
 * - decode: new tokens per second of the 31 one-token steps after it (the time of 32 new
 *   tokens minus the time of 1);
 * - generate: new tokens per second of the whole call (32 per prompt, the figure as before).
 * Prefill FLOPs count the LM head once per prompt (logits only at the last position).
 */
export function generation(
  shape: RealModelShape,
  batch: number,
  options: { parameterCount?: boolean; timeSplits?: boolean } = {},
): Workload {
  const { config } = shape;
  const prefix = shape.name;
  return (context) =>
    withModel(shape, `smollm2-generate-${batch}`, (model) => {
      const { prefill, total } = timeGeneration(model, batch, context);
      if (!(total > prefill))
        throw new Error(
          `generation at batch ${batch}: 32 new tokens took no longer than 1 (${total} s ≤ ${prefill} s); the machine was too busy to split prefill from decode, run again`,
        );
      if (options.timeSplits) recordGenerationSplits(model, batch, prefix);
      const promptFlops = batch * prefillFlops(config, promptTokens);
      const decodeFlops = batch * (newTokens - 1) * forwardFlopsPerToken(config);
      const figures = (name: string, units: number, seconds: number, flops: number) =>
        throughput(`${prefix}-${name}-batch${batch}`, { units, seconds, flops, unit: 'tokens/s' });
      const parameters: WorkloadFigure[] = options.parameterCount
        ? [{ name: `${prefix}-parameters`, value: model.parameterCount() / 1e6, unit: 'M' }]
        : [];
      return [
        ...parameters,
        figures('prefill', batch * promptTokens, prefill, promptFlops),
        figures('decode', batch * (newTokens - 1), total - prefill, decodeFlops),
        figures('generate', batch * newTokens, total, promptFlops + decodeFlops),
      ];
    });
}

/** Generation at one batch size on SmolLM2's shape (float32 weights). */
export function smolLM2Generation(
  batch: number,
  options: { parameterCount?: boolean; timeSplits?: boolean } = {},
): Workload {
  return generation(smolLM2, batch, options);
}

/**
 * Trained tokens per second of one LoRA step (rank 8 on the query and value projections,
 * PEFT's default targets): forward, next-token cross-entropy, backward and AdamW on the
 * adapters, on 4 sequences of 128 tokens, on a random model of `shape` (its frozen weights in
 * the shape's storage).
 */
export function loraStep(shape: RealModelShape): Workload {
  return (context) => loraStepOf(shape, context);
}

function loraStepOf(shape: RealModelShape, context: WorkloadContext): WorkloadFigure[] {
  const random = new RandomGenerator('smollm2-lora');
  const addAdapters = (model: TransformerLM) => applyLora(model, { ...shape.lora, random });
  return withModel(
    shape,
    'smollm2-135m-shape',
    (model) => {
      const optimizer = new AdamW(model.trainableParameters(), {
        learningRate: 1e-4,
        beta1: 0.9,
        beta2: 0.999,
        epsilon: 1e-8,
        weightDecay: 0,
      });
      const [batch, length] = [4, 128];
      const vocab = shape.config.vocabSize;
      const ids = Int32Array.from(randomIds(random, batch * length, vocab));
      const targets = Int32Array.from(randomIds(random, batch * length, vocab));
      const step = () => {
        tidy(() => crossEntropy(model.forward({ ids, batch, length }), targets).backward());
        optimizer.update();
        optimizer.zeroGrad();
      };
      const seconds = medianSeconds(step, context.warmup, context.repeats);
      recordTimeSplit(`${shape.name}-lora-train-step`, timedStep(step));
      return [
        throughput(`${shape.name}-lora-train-step`, {
          units: batch * length,
          seconds,
          flops: batch * length * loraStepFlopsPerToken(shape.config, shape.lora),
          unit: 'tokens/s',
        }),
      ];
    },
    addAdapters,
  );
}

/**
 * One more run of `step` through the timing backend, apart from the timed ones: where its time
 * goes (time-split.ts), with the threads busy in each part, which shows what runs serially.
 */
function timedStep(step: () => void, options: { cpu: boolean } = { cpu: true }): TimeSplit {
  const backend = getBackend();
  const run = (timed: typeof backend) => {
    setBackend(timed);
    try {
      step();
    } finally {
      setBackend(backend);
    }
  };
  return measureTimeSplitSync(backend, run, options).split;
}

/** The LoRA step on SmolLM2's shape (float32 weights). */
export const smolLM2LoraStep: Workload = loraStep(smolLM2);

/**
 * The products of one decode step at rollout batch size (64 rows) against SmolLM2's weights,
 * stored [out, in] and used transposed: query/output, key/value, gate/up, down and the tied LM
 * head (`-bt`: B transposed, read in place), in GFLOP/s; the runner adds each as a fraction of
 * the 4096×1024×1024 sgemm measured in the same process (`-of-sgemm4096`), the machine's bound
 * as our own kernels reach it, so the ratio survives a noisy machine.
 */
export function smolLM2DecodeProducts(): WorkloadFigure[] {
  const backend = getBackend();
  const results: WorkloadFigure[] = [];
  for (const [n, k] of [
    [576, 576],
    [192, 576],
    [1536, 576],
    [576, 1536],
    [49152, 576],
  ] as const) {
    const rate = benchmarkSgemm(backend, { m: 64, n, k, transposeB: true, minimumSeconds: 0.5 });
    const name = `smollm2-decode-64x${n}x${k}-bt`;
    results.push({ name, value: rate, unit: 'GFLOP/s', achievedGflops: rate });
  }
  return results;
}
