import { z } from 'zod';
import type { AdamParameters, LoraSettings, SamplingParameters } from './types.js';

/**
 * The JSON bodies of the Tinker API: requests as the SDK's pydantic models dump them
 * (snake_case, `type` tags, unset optional fields left out) and the answers' schemas, which
 * both the client (to reject malformed answers) and `teamtr serve --tinker` (to check requests)
 * use. Field names follow the Python SDK `tinker` 0.25.0 (tinker/types/*.py).
 */

/** The SDK version whose wire formats teamtr follows; sent as `sdk_version`. */
export const followedSdkVersion = '0.25.0';

export const routes = {
  health: '/api/v1/healthz',
  capabilities: '/api/v1/get_server_capabilities',
  createSession: '/api/v1/create_session',
  sessionHeartbeat: '/api/v1/session_heartbeat',
  createModel: '/api/v1/create_model',
  getInfo: '/api/v1/get_info',
  forwardBackward: '/api/v1/forward_backward',
  optimStep: '/api/v1/optim_step',
  saveWeights: '/api/v1/save_weights',
  loadWeights: '/api/v1/load_weights',
  saveWeightsForSampler: '/api/v1/save_weights_for_sampler',
  createSamplingSession: '/api/v1/create_sampling_session',
  sample: '/api/v1/asample',
  retrieveFuture: '/api/v1/retrieve_future',
} as const;

export function loraConfigBody(lora: LoraSettings): Record<string, unknown> {
  return {
    rank: lora.rank,
    ...(lora.seed === undefined ? {} : { seed: lora.seed }),
    train_unembed: lora.trainUnembed ?? true,
    train_mlp: lora.trainMlp ?? true,
    train_attn: lora.trainAttention ?? true,
  };
}

export function adamParamsBody(adam: AdamParameters): Record<string, number> {
  return {
    learning_rate: adam.learningRate,
    beta1: adam.beta1,
    beta2: adam.beta2,
    eps: adam.epsilon,
    weight_decay: adam.weightDecay,
    grad_clip_norm: adam.gradientClipNorm,
  };
}

export function samplingParamsBody(parameters: SamplingParameters): Record<string, unknown> {
  return {
    max_tokens: parameters.maxTokens,
    ...(parameters.seed === undefined ? {} : { seed: parameters.seed }),
    ...(parameters.stopTokens?.length ? { stop: parameters.stopTokens } : {}),
    temperature: parameters.temperature ?? 1,
    top_k: parameters.topK ?? -1,
    top_p: parameters.topP ?? 1,
  };
}

// ---- request schemas (checked by the server) ----

export const createSessionRequestSchema = z.looseObject({
  tags: z.array(z.string()).default([]),
  sdk_version: z.string(),
});

export const sessionHeartbeatRequestSchema = z.looseObject({ session_id: z.string().min(1) });

export const loraConfigSchema = z.looseObject({
  rank: z.number().int().positive(),
  seed: z.number().int().nullish(),
  train_unembed: z.boolean().default(true),
  train_mlp: z.boolean().default(true),
  train_attn: z.boolean().default(true),
});

export const createModelRequestSchema = z.looseObject({
  session_id: z.string().min(1),
  model_seq_id: z.number().int(),
  base_model: z.string().min(1),
  lora_config: loraConfigSchema.nullish(),
});

export const modelRequestSchema = z.looseObject({ model_id: z.string().min(1) });

export const optimStepRequestSchema = z.looseObject({
  model_id: z.string().min(1),
  seq_id: z.number().int().nullish(),
  adam_params: z.looseObject({
    learning_rate: z.number().nonnegative().default(1e-4),
    beta1: z.number().min(0).lt(1).default(0.9),
    beta2: z.number().min(0).lt(1).default(0.95),
    eps: z.number().positive().default(1e-12),
    weight_decay: z.number().nonnegative().default(0),
    grad_clip_norm: z.number().nonnegative().default(0),
  }),
});

export const saveWeightsRequestSchema = z.looseObject({
  model_id: z.string().min(1),
  path: z.string().min(1).nullish(),
  seq_id: z.number().int().nullish(),
  sampling_session_seq_id: z.number().int().nullish(),
});

export const loadWeightsRequestSchema = z.looseObject({
  model_id: z.string().min(1),
  path: z.string().min(1),
  optimizer: z.boolean(),
});

export const createSamplingSessionRequestSchema = z.looseObject({
  session_id: z.string().min(1),
  sampling_session_seq_id: z.number().int(),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
});

export const sampleRequestSchema = z.looseObject({
  num_samples: z.number().int().positive().default(1),
  prompt: z.looseObject({
    chunks: z.array(
      z.looseObject({ type: z.literal('encoded_text'), tokens: z.array(z.number().int()) }),
    ),
  }),
  sampling_params: z.looseObject({
    max_tokens: z.number().int().positive().nullish(),
    seed: z.number().int().nullish(),
    stop: z.union([z.string(), z.array(z.string()), z.array(z.number().int())]).nullish(),
    temperature: z.number().nonnegative().default(1),
    top_k: z.number().int().default(-1),
    top_p: z.number().gt(0).max(1).default(1),
  }),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
  sampling_session_id: z.string().nullish(),
  seq_id: z.number().int().nullish(),
  prompt_logprobs: z.boolean().nullish(),
});

export const retrieveFutureRequestSchema = z.looseObject({ request_id: z.string().min(1) });

// ---- answer schemas (checked by the client) ----

export const createSessionResponseSchema = z.looseObject({ session_id: z.string().min(1) });
export const untypedFutureSchema = z.looseObject({
  request_id: z.string().min(1),
  model_id: z.string().nullish(),
});
export const createModelResponseSchema = z.looseObject({ model_id: z.string().min(1) });
export const optimStepResponseSchema = z.looseObject({
  metrics: z.record(z.string(), z.number()).nullish(),
});
export const weightsPathResponseSchema = z.looseObject({ path: z.string().min(1) });
export const createSamplingSessionResponseSchema = z.looseObject({
  sampling_session_id: z.string().min(1),
});
export const getInfoResponseSchema = z.looseObject({
  model_id: z.string(),
  model_data: z.looseObject({ model_name: z.string().nullish() }),
  is_lora: z.boolean().nullish(),
  lora_rank: z.number().nullish(),
});
export const futureFailureSchema = z.looseObject({
  error: z.string(),
  category: z.string().default('unknown'),
});
