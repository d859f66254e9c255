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
  clientConfig: '/api/v1/client/config',
  clientDynamicConfig: '/api/v1/client/dynamic_config',
  telemetry: '/api/v1/telemetry',
  unloadModel: '/api/v1/unload_model',
  weightsInfo: '/api/v1/weights_info',
  /** GET …/{sampler_id} */
  samplers: '/api/v1/samplers',
  /** GET (list), GET …/{id}, GET …/{id}/checkpoints, DELETE …/{id}/checkpoints/{checkpoint_id} */
  trainingRuns: '/api/v1/training_runs',
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
    ...(parameters.stopStrings?.length ? { stop: parameters.stopStrings } : {}),
    temperature: parameters.temperature ?? 1,
    top_k: parameters.topK ?? -1,
    top_p: parameters.topP ?? 1,
  };
}

// ---- request schemas (checked by the server) ----
// Strict: a field the SDK 0.25.0 does not send is refused with its name, never ignored.

const typeTag = <Tag extends string>(tag: Tag) => z.literal(tag).optional();
const metadata = z.record(z.string(), z.unknown()).nullish();

export const clientConfigRequestSchema = z.strictObject({ sdk_version: z.string() });

export const createSessionRequestSchema = z.strictObject({
  tags: z.array(z.string()).default([]),
  user_metadata: metadata,
  sdk_version: z.string(),
  project_id: z.string().nullish(),
  type: typeTag('create_session'),
});

export const sessionHeartbeatRequestSchema = z.strictObject({
  session_id: z.string().min(1),
  type: typeTag('session_heartbeat'),
});

export const loraConfigSchema = z.strictObject({
  rank: z.number().int().positive(),
  seed: z.number().int().nullish(),
  train_unembed: z.boolean().default(true),
  train_mlp: z.boolean().default(true),
  train_attn: z.boolean().default(true),
});

export const createModelRequestSchema = z.strictObject({
  session_id: z.string().min(1),
  model_seq_id: z.number().int(),
  base_model: z.string().min(1),
  user_metadata: metadata,
  lora_config: loraConfigSchema.nullish(),
  type: typeTag('create_model'),
});

export const getInfoRequestSchema = z.strictObject({
  model_id: z.string().min(1),
  type: typeTag('get_info'),
});

export const unloadModelRequestSchema = z.strictObject({
  model_id: z.string().min(1),
  type: typeTag('unload_model'),
});

export const optimStepRequestSchema = z.strictObject({
  model_id: z.string().min(1),
  seq_id: z.number().int().nullish(),
  adam_params: z.strictObject({
    learning_rate: z.number().nonnegative().default(1e-4),
    beta1: z.number().min(0).lt(1).default(0.9),
    beta2: z.number().min(0).lt(1).default(0.95),
    eps: z.number().positive().default(1e-12),
    weight_decay: z.number().nonnegative().default(0),
    grad_clip_norm: z.number().nonnegative().default(0),
  }),
  type: typeTag('optim_step'),
});

const ttlSeconds = z.number().int().positive().nullish();

export const saveWeightsRequestSchema = z.strictObject({
  model_id: z.string().min(1),
  path: z.string().min(1).nullish(),
  seq_id: z.number().int().nullish(),
  ttl_seconds: ttlSeconds,
  overwrite: z.boolean().default(false),
  type: typeTag('save_weights'),
});

export const saveWeightsForSamplerRequestSchema = z.strictObject({
  model_id: z.string().min(1),
  path: z.string().min(1).nullish(),
  sampling_session_seq_id: z.number().int().nullish(),
  seq_id: z.number().int().nullish(),
  ttl_seconds: ttlSeconds,
  type: typeTag('save_weights_for_sampler'),
});

export const loadWeightsRequestSchema = z.strictObject({
  model_id: z.string().min(1).nullish(),
  seq_id: z.number().int().nullish(),
  session_id: z.string().nullish(),
  model_seq_id: z.number().int().nullish(),
  base_model: z.string().nullish(),
  user_metadata: metadata,
  path: z.string().min(1),
  optimizer: z.boolean(),
  weights_access_token: z.string().nullish(),
  type: typeTag('load_weights'),
});

export const weightsInfoRequestSchema = z.strictObject({ tinker_path: z.string().min(1) });

export const createSamplingSessionRequestSchema = z.strictObject({
  session_id: z.string().min(1),
  sampling_session_seq_id: z.number().int(),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
  type: typeTag('create_sampling_session'),
});

export const sampleRequestSchema = z.strictObject({
  num_samples: z.number().int().positive().default(1),
  prompt: z.strictObject({
    // Loose: an image or audio chunk is refused by name where the tokens are read.
    chunks: z.array(
      z.looseObject({ type: z.string(), tokens: z.array(z.number().int()).optional() }),
    ),
  }),
  sampling_params: z.strictObject({
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
  topk_prompt_logprobs: z.number().int().nonnegative().default(0),
  type: typeTag('sample'),
});

export const retrieveFutureRequestSchema = z.strictObject({
  request_id: z.string().min(1),
  allow_metadata_only: z.boolean().default(false),
});

/** Telemetry batches are accepted and counted, not stored: the events' shape is the SDK's own. */
export const telemetryRequestSchema = z.looseObject({
  events: z.array(z.unknown()),
  session_id: z.string(),
});

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
