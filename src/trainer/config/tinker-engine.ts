import { z } from 'zod';

/**
 * `agents[].engine.tinker`: an agent trained on a Tinker service (hosted, or `teamtr serve
 * --tinker`). Its turns are sampled by the service's sampler and its updates run there as a
 * LoRA adapter on `baseModel`; teamtr keeps only the tokenizer, to render its input and read
 * its turns. The API key is read from the environment variable `apiKeyEnv` and never written
 * to the run directory or a log.
 */
export const tinkerEngineSchema = z.strictObject({
  /** The service root, before /api/v1: e.g. "http://127.0.0.1:8000" for `teamtr serve --tinker`. */
  baseURL: z.string().url(),
  /** The base model as the service names it (e.g. "Qwen/Qwen3-8B", or --name of a local server). */
  baseModel: z.string().min(1),
  /**
   * A local model directory or `builtin:<task>/<role>` whose tokenizer is the base model's: it
   * renders the agent's input into token ids and decodes its sampled tokens (never re-tokenized).
   */
  tokenizer: z.string().min(1),
  /** The agent's LoRA adapter on the service. */
  lora: z.strictObject({
    /** Adapter rank. */
    rank: z.number().int().positive().max(1_024),
    /** Seed of the adapter's initialization. @default derived from the run's seed and the agent's name */
    seed: z.number().int().nonnegative().max(0x7fffffff).optional(),
  }),
  /** Environment variable holding the API key. */
  apiKeyEnv: z.string().min(1).default('TINKER_API_KEY'),
  /**
   * `objective`: the run's objective (clipped surrogate) as a custom loss — a forward for the
   * log-probs, then forward_backward with its gradient as cross-entropy weights (two calls per
   * step; the same gradient a local agent takes). `importance_sampling`: the service's built-in
   * loss, −Σ_t exp(ℓ_t − ℓ_t^old)·A_t/T over the minibatch's T tokens (one call, no clip: the
   * trust region is the only limit on a step).
   */
  loss: z.enum(['objective', 'importance_sampling']).default('objective'),
  /** Sampling requests in flight at once. */
  concurrency: z.number().int().positive().max(1_024).default(16),
  /** Per HTTP attempt. */
  timeoutSeconds: z.number().positive().max(86_400).default(60),
  /** Further attempts after 408, 429, 5xx, a timeout or a lost connection. */
  retries: z.number().int().nonnegative().max(100).default(5),
  /** How long one operation (a future) may take, polling included. */
  futureTimeoutSeconds: z.number().positive().max(86_400).default(600),
});
export type TinkerEngineConfig = z.output<typeof tinkerEngineSchema>;

/** `agents[].engine`: where a trainable agent's model lives when it is not local. */
export const agentEngineSchema = z.strictObject({ tinker: tinkerEngineSchema });
