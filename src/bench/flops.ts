import { modelFeatures, resolveModelConfig, type ModelConfigInput } from '../nn/config.js';
import type { WorkloadFigure } from './context.js';
import type { BenchmarkResult } from './workloads.js';

/**
 * Floating-point work of the real-model workloads, from the model config, so each throughput
 * can be stated as a fraction of the machine's bound (the same run's sgemm 4096×1024×1024).
 *
 * Counted: the products with weight matrices, 2 FLOP per multiply-add, which is where a
 * transformer's work is. Not counted: attention's score and value products (4·context·heads·
 * headDim per token per layer: under 3% of the total at SmolLM2's shape and ≤ 128 positions),
 * norms, activations, softmax, sampling and the optimizer (elementwise work). A fraction near 1
 * therefore means the workload runs its products at the sgemm bound with nothing else in the way.
 */

/** A weight matrix used as y = x·Wᵀ: `inFeatures` columns, `outFeatures` rows. */
export interface MatrixShape {
  inFeatures: number;
  outFeatures: number;
}

/** Each layer's weight matrices by module name (the names LoRA targets). */
export function layerMatrices(input: ModelConfigInput): Record<string, MatrixShape> {
  const config = resolveModelConfig(input);
  const { hiddenSize, heads, kvHeads, headDim, intermediateSize } = config;
  const matrices: Record<string, MatrixShape> = {
    queryProjection: { inFeatures: hiddenSize, outFeatures: heads * headDim },
    keyProjection: { inFeatures: hiddenSize, outFeatures: kvHeads * headDim },
    valueProjection: { inFeatures: hiddenSize, outFeatures: kvHeads * headDim },
    outputProjection: { inFeatures: heads * headDim, outFeatures: hiddenSize },
    upProjection: { inFeatures: hiddenSize, outFeatures: intermediateSize },
    downProjection: { inFeatures: intermediateSize, outFeatures: hiddenSize },
  };
  // SwiGLU has a third matrix, the gate; GPT-2's GELU MLP does not.
  if (modelFeatures(config).feedForward === 'swiglu')
    matrices.gateProjection = { inFeatures: hiddenSize, outFeatures: intermediateSize };
  return matrices;
}

function entries(shape: MatrixShape): number {
  return shape.inFeatures * shape.outFeatures;
}

/** Weights in all layers' matrices: what one position passes through below the LM head. */
export function layerMatrixWeights(input: ModelConfigInput): number {
  const perLayer = Object.values(layerMatrices(input)).reduce((sum, m) => sum + entries(m), 0);
  return resolveModelConfig(input).layers * perLayer;
}

/** Weights of the LM head [vocab, hidden] (the embedding itself when tied). */
export function headWeights(input: ModelConfigInput): number {
  const config = resolveModelConfig(input);
  return config.vocabSize * config.hiddenSize;
}

/**
 * Forward FLOPs of one position that produces logits: 2·(layer matrices + LM head) ≈ 2 × the
 * parameter count (the embedding lookup is free, but a tied embedding is the head). SmolLM2-135M:
 * 2·(30·3,538,944 + 49,152·576) = 268,959,744 ≈ 269 MFLOP.
 */
export function forwardFlopsPerToken(input: ModelConfigInput): number {
  return 2 * (layerMatrixWeights(input) + headWeights(input));
}

/**
 * Forward FLOPs of a prompt pass (prefill) of `promptTokens` positions that computes logits only
 * at the last one, as generation does: 2·(promptTokens·layer matrices + LM head) per sequence.
 */
export function prefillFlops(input: ModelConfigInput, promptTokens: number): number {
  return 2 * (promptTokens * layerMatrixWeights(input) + headWeights(input));
}

export interface LoraShape {
  rank: number;
  /** Module names as in layerMatrices, e.g. ["queryProjection", "valueProjection"]. */
  targetModules: readonly string[];
}

/**
 * FLOPs per trained token of a LoRA step on a frozen base:
 *   4·W_base + 6·W_adapters
 * The frozen base (layer matrices and LM head, W_base weights) costs its forward (2·W) and the
 * gradient of its inputs (2·W), which the adapters below need; it needs no weight gradient.
 * Each adapter, A [rank, in] and B [out, rank] (W_adapters = rank·(in + out) per target), costs
 * forward, input gradient and weight gradient (6·W). SmolLM2-135M, rank 8 on query and value:
 * 4·134,479,872 + 6·460,800 = 540,684,288 ≈ 541 MFLOP. (A full fine-tuning step is 6·W.)
 */
export function loraStepFlopsPerToken(input: ModelConfigInput, lora: LoraShape): number {
  const baseWeights = layerMatrixWeights(input) + headWeights(input);
  return 4 * baseWeights + 6 * adapterWeights(input, lora);
}

/**
 * Forward FLOPs of one position that produces logits with LoRA adapters unmerged: the base's
 * (forwardFlopsPerToken) plus 2·W_adapters (SmolLM2-135M, rank 8 on query and value:
 * 268,959,744 + 921,600 ≈ 270 MFLOP).
 */
export function loraForwardFlopsPerToken(input: ModelConfigInput, lora: LoraShape): number {
  return forwardFlopsPerToken(input) + 2 * adapterWeights(input, lora);
}

/** Weights of all layers' adapters: rank·(in + out) per target matrix. */
function adapterWeights(input: ModelConfigInput, lora: LoraShape): number {
  const matrices = layerMatrices(input);
  let perLayer = 0;
  for (const name of lora.targetModules) {
    const shape = matrices[name];
    if (!shape)
      throw new Error(
        `LoRA FLOPs: unknown target module "${name}" (this config's matrices: ${Object.keys(matrices).sort().join(', ')})`,
      );
    perLayer += lora.rank * (shape.inFeatures + shape.outFeatures);
  }
  return resolveModelConfig(input).layers * perLayer;
}

/** A throughput figure (`units` per second) with the GFLOP/s its `flops` in `seconds` make. */
export function throughput(
  name: string,
  measured: { units: number; seconds: number; flops: number; unit: string },
): WorkloadFigure {
  return {
    name,
    value: measured.units / measured.seconds,
    unit: measured.unit,
    achievedGflops: measured.flops / measured.seconds / 1e9,
  };
}

/**
 * The figures as printed: each one, and after each throughput its fraction of `boundGflops`
 * (sgemm 4096×1024×1024 on the same machine at the same time), named `<name>-of-sgemm4096`,
 * unit x.
 */
export function withFractionsOfBound(
  figures: readonly WorkloadFigure[],
  boundGflops: number,
): BenchmarkResult[] {
  return figures.flatMap(({ name, value, unit, achievedGflops }) => [
    { name, value, unit },
    ...(achievedGflops === undefined
      ? []
      : [{ name: `${name}-of-sgemm4096`, value: achievedGflops / boundGflops, unit: 'x' }]),
  ]);
}
