import { z } from 'zod';
import { resolveModelConfig, type ModelConfig } from '../../nn/config.js';
import { ConfigError, TeamtrError } from '../../util/errors.js';
import { parseWithSchema } from '../../util/schema.js';
import { warnOnce } from '../../util/warn.js';

/**
 * Hugging Face `config.json` ↔ the engine's ModelConfig, one entry per supported `model_type`.
 * A Hugging Face config has dozens of keys; unknown ones are ignored (it is a foreign format),
 * but every key that changes the computation and that the engine does not implement (rope
 * scaling, a sliding window shorter than the sequence, MLP bias, another activation) is an
 * error naming the key.
 */

export class UnsupportedArchitectureError extends TeamtrError {
  constructor(
    readonly source: string,
    readonly modelType: string,
    readonly supported: readonly string[],
  ) {
    super(
      `${source}: model_type ${JSON.stringify(modelType)} is not supported (supported: ${supported.join(', ')})`,
    );
  }
}

const positiveInteger = z.number().int().positive();

const llamaFamilySchema = z.looseObject({
  vocab_size: positiveInteger,
  hidden_size: positiveInteger,
  intermediate_size: positiveInteger,
  num_hidden_layers: positiveInteger,
  num_attention_heads: positiveInteger,
  num_key_value_heads: positiveInteger.nullable().optional(),
  head_dim: positiveInteger.nullable().optional(),
  max_position_embeddings: positiveInteger,
  rms_norm_eps: z.number().positive().default(1e-6),
  rope_theta: z.number().positive().optional(),
  rope_parameters: z
    .looseObject({ rope_theta: z.number().positive().optional(), rope_type: z.string().optional() })
    .nullable()
    .optional(),
  rope_scaling: z.unknown().optional(),
  tie_word_embeddings: z.boolean().default(false),
  attention_bias: z.boolean().optional(),
  mlp_bias: z.boolean().default(false),
  hidden_act: z.string().default('silu'),
  sliding_window: positiveInteger.nullable().optional(),
  use_sliding_window: z.boolean().optional(),
});
type LlamaFamilyConfig = z.output<typeof llamaFamilySchema>;

const gpt2Schema = z.looseObject({
  vocab_size: positiveInteger,
  n_embd: positiveInteger,
  n_layer: positiveInteger,
  n_head: positiveInteger,
  n_positions: positiveInteger,
  n_inner: positiveInteger.nullable().optional(),
  layer_norm_epsilon: z.number().positive().default(1e-5),
  activation_function: z.string().default('gelu_new'),
  tie_word_embeddings: z.boolean().default(true),
  scale_attn_weights: z.boolean().default(true),
  scale_attn_by_inverse_layer_idx: z.boolean().default(false),
  reorder_and_upcast_attn: z.boolean().default(false),
});

/** How one `model_type` reads into (and writes out of) the engine's config. */
export interface ArchitectureConfig {
  readonly modelType: string;
  toModelConfig(raw: Record<string, unknown>, source: string): ModelConfig;
  /** A config.json for `config`; `base` (the original file) keeps keys the engine ignores. */
  fromModelConfig(config: ModelConfig, base?: Record<string, unknown>): Record<string, unknown>;
}

function unsupported(source: string, key: string, detail: string): ConfigError {
  return new ConfigError(`${source}: ${key}`, detail);
}

function ropeTheta(parsed: LlamaFamilyConfig, source: string): number {
  const scaling = parsed.rope_scaling as { rope_type?: unknown; type?: unknown } | null | undefined;
  const scalingType =
    scaling && typeof scaling === 'object' ? (scaling.rope_type ?? scaling.type) : undefined;
  // Some configs spell plain RoPE as {"rope_type": "default"}.
  if (scaling !== undefined && scaling !== null && scalingType !== 'default') {
    throw unsupported(
      source,
      'rope_scaling',
      `${JSON.stringify(scaling)} is not supported (only unscaled RoPE is implemented)`,
    );
  }
  const ropeType = parsed.rope_parameters?.rope_type;
  if (ropeType !== undefined && ropeType !== 'default') {
    throw unsupported(
      source,
      'rope_parameters.rope_type',
      `"${ropeType}" is not supported (only "default")`,
    );
  }
  return parsed.rope_theta ?? parsed.rope_parameters?.rope_theta ?? 10000;
}

/** Llama-family variants differ in QKV bias, QK-norm and how the sliding window is declared. */
interface LlamaVariant {
  qkvBias: (parsed: LlamaFamilyConfig) => boolean;
  queryKeyNorm: boolean;
  window: (parsed: LlamaFamilyConfig) => number | null;
  /** Variant-specific keys of a written config.json. */
  extraKeys: (config: ModelConfig) => Record<string, unknown>;
}

function llamaFamilyModelConfig(
  variant: LlamaVariant,
  raw: Record<string, unknown>,
  source: string,
): ModelConfig {
  const parsed = parseWithSchema(llamaFamilySchema, raw, source);
  if (parsed.hidden_act !== 'silu') {
    throw unsupported(
      source,
      'hidden_act',
      `"${parsed.hidden_act}" is not supported (only "silu")`,
    );
  }
  if (parsed.mlp_bias) throw unsupported(source, 'mlp_bias', 'MLP biases are not supported');
  const window = slidingWindow(variant, parsed, raw, source);
  // Full causal attention equals sliding-window attention while sequences fit the window.
  const maxPositions =
    window === null
      ? parsed.max_position_embeddings
      : Math.min(window, parsed.max_position_embeddings);
  return resolveModelConfig(
    {
      architecture: 'llama',
      vocabSize: parsed.vocab_size,
      hiddenSize: parsed.hidden_size,
      layers: parsed.num_hidden_layers,
      heads: parsed.num_attention_heads,
      kvHeads: parsed.num_key_value_heads ?? parsed.num_attention_heads,
      ...(parsed.head_dim ? { headDim: parsed.head_dim } : {}),
      intermediateSize: parsed.intermediate_size,
      maxPositions,
      ropeTheta: ropeTheta(parsed, source),
      normEpsilon: parsed.rms_norm_eps,
      attentionBias: variant.qkvBias(parsed),
      queryKeyNorm: variant.queryKeyNorm,
      tieEmbeddings: parsed.tie_word_embeddings,
    },
    source,
  );
}

/**
 * The sliding window that applies to this checkpoint, or null: the variant's rule (Mistral
 * always, Qwen when use_sliding_window), per-layer `layer_types` as newer transformers write
 * them, and Qwen's max_window_layers (layers below it attend fully; when it covers every layer,
 * no layer slides). The window bounds the positions teamtr runs, so it is never dropped
 * silently: a cap below max_position_embeddings is said once, and a window the engine cannot
 * honour is refused.
 */
function slidingWindow(
  variant: LlamaVariant,
  parsed: LlamaFamilyConfig,
  raw: Record<string, unknown>,
  source: string,
): number | null {
  const layerTypes = Array.isArray(raw.layer_types) ? (raw.layer_types as unknown[]) : [];
  const slidingLayers = layerTypes.includes('sliding_attention');
  if (slidingLayers && !parsed.sliding_window)
    throw unsupported(
      source,
      'layer_types',
      'lists "sliding_attention" layers but sliding_window is not set; give the window size',
    );
  let window = slidingLayers ? parsed.sliding_window! : variant.window(parsed);
  const fullLayers = raw.max_window_layers;
  if (!slidingLayers && typeof fullLayers === 'number' && fullLayers >= parsed.num_hidden_layers)
    window = null;
  if (window === null && parsed.sliding_window && variant.window === ignoresWindow)
    warnOnce(
      `${source}:sliding_window`,
      'TEAMTR_SLIDING_WINDOW',
      `${source}: sliding_window ${parsed.sliding_window} is ignored, as transformers ignores it for this model_type (full attention over max_position_embeddings ${parsed.max_position_embeddings})`,
    );
  if (window !== null && window < parsed.max_position_embeddings)
    warnOnce(
      `${source}:sliding_window`,
      'TEAMTR_SLIDING_WINDOW',
      `${source}: sliding_window ${window} limits this model to ${window} positions (of max_position_embeddings ${parsed.max_position_embeddings}): teamtr computes full attention, which equals sliding-window attention only while a sequence fits the window`,
    );
  return window;
}

function llamaFamilyConfigJson(
  modelType: string,
  variant: LlamaVariant,
  config: ModelConfig,
  base: Record<string, unknown>,
): Record<string, unknown> {
  // Written configs carry plain RoPE, which is all the engine computes.
  const kept = Object.fromEntries(
    Object.entries(base).filter(([key]) => key !== 'rope_scaling' && key !== 'rope_parameters'),
  );
  return {
    ...kept,
    architectures: [architectureClassNames[modelType]],
    model_type: modelType,
    vocab_size: config.vocabSize,
    hidden_size: config.hiddenSize,
    intermediate_size: config.intermediateSize,
    num_hidden_layers: config.layers,
    num_attention_heads: config.heads,
    num_key_value_heads: config.kvHeads,
    head_dim: config.headDim,
    max_position_embeddings: base.max_position_embeddings ?? config.maxPositions,
    rms_norm_eps: config.normEpsilon,
    rope_theta: config.ropeTheta,
    tie_word_embeddings: config.tieEmbeddings,
    hidden_act: 'silu',
    ...variant.extraKeys(config),
    torch_dtype: 'float32',
  };
}

function llamaFamily(modelType: string, variant: LlamaVariant): ArchitectureConfig {
  return {
    modelType,
    toModelConfig: (raw, source) => llamaFamilyModelConfig(variant, raw, source),
    fromModelConfig: (config, base = {}) => llamaFamilyConfigJson(modelType, variant, config, base),
  };
}

const gpt2: ArchitectureConfig = {
  modelType: 'gpt2',
  toModelConfig(raw, source) {
    const parsed = parseWithSchema(gpt2Schema, raw, source);
    if (!['gelu_new', 'gelu_pytorch_tanh'].includes(parsed.activation_function)) {
      throw unsupported(
        source,
        'activation_function',
        `"${parsed.activation_function}" is not supported (supported: gelu_new, gelu_pytorch_tanh)`,
      );
    }
    for (const key of ['scale_attn_by_inverse_layer_idx', 'reorder_and_upcast_attn'] as const) {
      if (parsed[key]) throw unsupported(source, key, 'must be false (not implemented)');
    }
    if (!parsed.scale_attn_weights)
      throw unsupported(source, 'scale_attn_weights', 'must be true (not implemented otherwise)');
    return resolveModelConfig(
      {
        architecture: 'gpt2',
        vocabSize: parsed.vocab_size,
        hiddenSize: parsed.n_embd,
        layers: parsed.n_layer,
        heads: parsed.n_head,
        intermediateSize: parsed.n_inner ?? 4 * parsed.n_embd,
        maxPositions: parsed.n_positions,
        normEpsilon: parsed.layer_norm_epsilon,
        tieEmbeddings: parsed.tie_word_embeddings,
      },
      source,
    );
  },
  fromModelConfig(config, base = {}) {
    return {
      ...base,
      architectures: ['GPT2LMHeadModel'],
      model_type: 'gpt2',
      vocab_size: config.vocabSize,
      n_embd: config.hiddenSize,
      n_layer: config.layers,
      n_head: config.heads,
      n_inner: config.intermediateSize,
      n_positions: config.maxPositions,
      n_ctx: config.maxPositions,
      layer_norm_epsilon: config.normEpsilon,
      activation_function: 'gelu_new',
      tie_word_embeddings: config.tieEmbeddings,
      torch_dtype: 'float32',
    };
  },
};

const architectureClassNames: Record<string, string> = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  mistral: 'MistralForCausalLM',
  gpt2: 'GPT2LMHeadModel',
};

const slidingWindowIfEnabled = (parsed: LlamaFamilyConfig) =>
  parsed.use_sliding_window ? (parsed.sliding_window ?? null) : null;

const noKeys = () => ({});

/** Llama has no sliding-window attention in transformers: the key, if present, does nothing. */
function ignoresWindow(): null {
  return null;
}

export const architectureConfigs: readonly ArchitectureConfig[] = [
  llamaFamily('llama', {
    qkvBias: (parsed) => parsed.attention_bias ?? false,
    queryKeyNorm: false,
    window: ignoresWindow,
    extraKeys: (config) => ({ attention_bias: config.attentionBias, mlp_bias: false }),
  }),
  // Qwen2 always has QKV biases; its config has no key for them.
  llamaFamily('qwen2', {
    qkvBias: () => true,
    queryKeyNorm: false,
    window: slidingWindowIfEnabled,
    extraKeys: noKeys,
  }),
  llamaFamily('qwen3', {
    qkvBias: (parsed) => parsed.attention_bias ?? false,
    queryKeyNorm: true,
    window: slidingWindowIfEnabled,
    extraKeys: (config) => ({ attention_bias: config.attentionBias }),
  }),
  llamaFamily('mistral', {
    qkvBias: () => false,
    queryKeyNorm: false,
    window: (parsed) => parsed.sliding_window ?? null,
    extraKeys: noKeys,
  }),
  gpt2,
];

export const supportedModelTypes = architectureConfigs.map((entry) => entry.modelType);

/** The entry for a config.json's `model_type`, or an error listing the supported ones. */
export function architectureOf(raw: Record<string, unknown>, source: string): ArchitectureConfig {
  const modelType = raw.model_type;
  if (typeof modelType !== 'string')
    throw new ConfigError(
      `${source}: model_type`,
      `missing (supported: ${supportedModelTypes.join(', ')})`,
    );
  const entry = architectureConfigs.find((candidate) => candidate.modelType === modelType);
  if (!entry) throw new UnsupportedArchitectureError(source, modelType, supportedModelTypes);
  return entry;
}

/**
 * The model_type an engine config is written as when no original config.json exists: QK-norm
 * means Qwen3, QKV bias Qwen2, otherwise Llama.
 */
export function defaultModelTypeFor(config: ModelConfig): string {
  if (config.architecture === 'gpt2') return 'gpt2';
  if (config.queryKeyNorm) return 'qwen3';
  return config.attentionBias ? 'qwen2' : 'llama';
}
