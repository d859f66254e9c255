import { z } from 'zod';
import { FileFormatError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';

/**
 * The architecture of a decoder-only language model: one strict schema, the single source of
 * defaults. Saved resolved inside every checkpoint (`config.json`), so a checkpoint always says
 * exactly what it is. Unknown keys are an error.
 *
 * - `llama`: RMSNorm, RoPE, SwiGLU MLP, grouped-query attention; `attentionBias` gives Qwen2's
 *   QKV bias, `queryKeyNorm` Qwen3's per-head RMSNorm on queries and keys.
 * - `gpt2`: learned positions, LayerNorm, GELU (tanh) MLP, biases on every Linear.
 *
 * Sizes have upper bounds well past any released model's, so a corrupt or hostile config.json
 * fails here, naming the key, instead of allocating gigabytes first; `checkModelFits`
 * (models/memory-estimate.ts) then compares the whole model with the machine's memory.
 */
export const modelConfigSchema = z
  .strictObject({
    architecture: z.enum(['llama', 'gpt2']),
    vocabSize: z.number().int().positive().max(4_194_304),
    hiddenSize: z.number().int().positive().max(65_536),
    layers: z.number().int().positive().max(1_024),
    heads: z.number().int().positive().max(1_024),
    /** Grouped-query attention: heads must be a multiple of kvHeads. @default heads */
    kvHeads: z.number().int().positive().max(1_024).optional(),
    /** @default hiddenSize / heads */
    headDim: z.number().int().positive().max(4_096).optional(),
    intermediateSize: z.number().int().positive().max(1_048_576),
    /** Longest sequence (prompt + completion) the model accepts. */
    maxPositions: z.number().int().positive().max(1_048_576),
    ropeTheta: z.number().positive().default(10000),
    normEpsilon: z.number().positive().default(1e-5),
    attentionBias: z.boolean().default(false),
    queryKeyNorm: z.boolean().default(false),
    tieEmbeddings: z.boolean().default(false),
  })
  .superRefine((config, context) => {
    const kvHeads = config.kvHeads ?? config.heads;
    if (config.heads % kvHeads !== 0) {
      context.addIssue({
        code: 'custom',
        path: ['kvHeads'],
        message: `heads (${config.heads}) must be a multiple of kvHeads (${kvHeads})`,
      });
    }
    if (config.headDim === undefined && config.hiddenSize % config.heads !== 0) {
      context.addIssue({
        code: 'custom',
        path: ['headDim'],
        message: `hiddenSize (${config.hiddenSize}) is not divisible by heads (${config.heads}); set headDim`,
      });
    }
    if (
      (config.headDim ?? config.hiddenSize / config.heads) % 2 !== 0 &&
      modelFeatures(config).positions === 'rotary'
    ) {
      context.addIssue({
        code: 'custom',
        path: ['headDim'],
        message: 'RoPE needs an even headDim',
      });
    }
  });

export type ModelConfigInput = z.input<typeof modelConfigSchema>;

/** A validated config with every default filled in. */
export interface ModelConfig {
  architecture: 'llama' | 'gpt2';
  vocabSize: number;
  hiddenSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediateSize: number;
  maxPositions: number;
  ropeTheta: number;
  normEpsilon: number;
  attentionBias: boolean;
  queryKeyNorm: boolean;
  tieEmbeddings: boolean;
}

/**
 * What the model code builds, resolved once from the architecture name and its options: the
 * layers read these fields, never the name.
 */
export interface ModelFeatures {
  norm: 'rmsnorm' | 'layernorm';
  /** Rotary embeddings on queries and keys, or a learned position table added to the input. */
  positions: 'rotary' | 'learned';
  /** SwiGLU (gate, up, down) or a GELU (tanh) MLP (up, down). */
  feedForward: 'swiglu' | 'gelu';
  /** Biases on the query, key and value projections. */
  queryKeyValueBias: boolean;
  /** Biases on the attention output projection and the MLP's projections. */
  outputBias: boolean;
  /** Per-head RMSNorm on queries and keys (Qwen3). */
  queryKeyNorm: boolean;
}

const architectureFeatures: Record<
  ModelConfig['architecture'],
  Omit<ModelFeatures, 'queryKeyValueBias' | 'queryKeyNorm'> & { bias: boolean }
> = {
  llama: {
    norm: 'rmsnorm',
    positions: 'rotary',
    feedForward: 'swiglu',
    outputBias: false,
    bias: false,
  },
  gpt2: {
    norm: 'layernorm',
    positions: 'learned',
    feedForward: 'gelu',
    outputBias: true,
    bias: true,
  },
};

export function modelFeatures(
  config: Pick<ModelConfig, 'architecture' | 'attentionBias' | 'queryKeyNorm'>,
): ModelFeatures {
  const { bias, ...features } = architectureFeatures[config.architecture];
  return {
    ...features,
    queryKeyValueBias: bias || config.attentionBias,
    queryKeyNorm: config.queryKeyNorm,
  };
}

/** Validates a config (raw JSON or typed) and fills in every default, including derived ones. */
export function resolveModelConfig(value: unknown, source = 'model config'): ModelConfig {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new FileFormatError(source, 'expected a JSON object holding the model config');
  }
  const parsed = parseWithSchema(modelConfigSchema, value, source);
  return {
    ...parsed,
    kvHeads: parsed.kvHeads ?? parsed.heads,
    headDim: parsed.headDim ?? parsed.hiddenSize / parsed.heads,
  };
}
