import { benchmarkSgemm } from '../backend/benchmark.js';
import { getBackend } from '../backend/index.js';
import { applyLora } from '../nn/lora.js';
import type { ModelConfigInput } from '../nn/config.js';
import { generate } from '../nn/generate.js';
import { TransformerLM } from '../nn/transformer.js';
import { AdamW } from '../optim/adamw.js';
import { crossEntropy, tidy } from '../tensor/index.js';
import { RandomGenerator } from '../util/random.js';
import {
  medianSeconds,
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

/**
 * A real small model's cost on this machine: random weights with the exact shape of
 * SmolLM2-135M (Llama architecture, 30 layers, d_model 576, 9 heads with 3 KV heads, MLP 1536,
 * vocabulary 49152, tied embeddings), so the numbers are what a Hugging Face checkpoint of that
 * size costs without downloading one. bench/torch_real_model.py runs the same workloads in
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

const prefix = 'smollm2-135m-shape';
const promptTokens = 32;
const newTokens = 32;

/** Runs `measure` on a fresh random model of SmolLM2's shape and frees it afterwards. */
export function withSmolLM2<T>(seed: string, measure: (model: TransformerLM) => T): T {
  const model = new TransformerLM(smolLM2Shape, new RandomGenerator(seed));
  try {
    return measure(model);
  } finally {
    model.destroy();
  }
}

function randomIds(random: RandomGenerator, count: number): number[] {
  return Array.from({ length: count }, () => random.nextInt(smolLM2Shape.vocabSize));
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
  const random = new RandomGenerator(`smollm2-generate-${batch}`);
  const prompts = Array.from({ length: batch }, () => randomIds(random, promptTokens));
  const seconds = (maxNewTokens: number): number => {
    const start = process.hrtime.bigint();
    generate(model, { prompts, maxNewTokens, random, temperature: 1 });
    return Number(process.hrtime.bigint() - start) / 1e9;
  };
  // A whole generation is 10+ s at batch 64, so warm-ups are prompt passes only.
  return timePrefillAndTotal(seconds, newTokens, context);
}

/**
 * Generation at one batch size, in three figures, each with its fraction of the bound:
 * - prefill: prompt tokens per second of the prompt pass (1 new token generated);
 * - decode: new tokens per second of the 31 one-token steps after it (the time of 32 new
 *   tokens minus the time of 1);
 * - generate: new tokens per second of the whole call (32 per prompt, the figure as before).
 * Prefill FLOPs count the LM head once per prompt (logits only at the last position).
 */
export function smolLM2Generation(
  batch: number,
  options: { parameterCount?: boolean } = {},
): Workload {
  return (context) =>
    withSmolLM2(`smollm2-generate-${batch}`, (model) => {
      const { prefill, total } = timeGeneration(model, batch, context);
      if (!(total > prefill))
        throw new Error(
          `generation at batch ${batch}: 32 new tokens took no longer than 1 (${total} s ≤ ${prefill} s); the machine was too busy to split prefill from decode, run again`,
        );
      const promptFlops = batch * prefillFlops(smolLM2Shape, promptTokens);
      const decodeFlops = batch * (newTokens - 1) * forwardFlopsPerToken(smolLM2Shape);
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

/**
 * Trained tokens per second of one LoRA step (rank 8 on the query and value projections,
 * PEFT's default targets): forward, next-token cross-entropy, backward and AdamW on the
 * adapters, on 4 sequences of 128 tokens.
 */
export function smolLM2LoraStep(context: WorkloadContext): WorkloadFigure[] {
  return withSmolLM2('smollm2-135m-shape', (model) => {
    const random = new RandomGenerator('smollm2-lora');
    applyLora(model, { ...smolLM2Lora, random });
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
      context.warmup,
      context.repeats,
    );
    return [
      throughput(`${prefix}-lora-train-step`, {
        units: batch * length,
        seconds,
        flops: batch * length * loraStepFlopsPerToken(smolLM2Shape, smolLM2Lora),
        unit: 'tokens/s',
      }),
    ];
  });
}

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
