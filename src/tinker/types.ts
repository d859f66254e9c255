/**
 * The data the Tinker API trains on and answers with, as teamtr's client and server hold them.
 * Names are spelled out here; the wire spelling (snake_case JSON, protobuf) lives in
 * wire-codec.ts and json-wire.ts. Wire formats follow the Python SDK `tinker` 0.25.0.
 */

/** The two element types the public wire carries. */
export type TensorDtype = 'float32' | 'int64';

/** A dense tensor: elements in row-major order and its shape. */
export interface TensorData {
  dtype: TensorDtype;
  data: number[];
  shape: number[];
}

/**
 * One training sequence. `inputTokens[i]` predicts `lossInputs.target_tokens[i]` (the standard
 * shift by one); the loss inputs are named as the service names them (`target_tokens`,
 * `weights`, `logprobs`, `advantages`).
 */
export interface Datum {
  inputTokens: number[];
  lossInputs: Record<string, TensorData>;
}

/** The service's built-in losses that teamtr's engine implements. */
export const builtInLosses = ['cross_entropy', 'importance_sampling'] as const;
export type BuiltInLoss = (typeof builtInLosses)[number];

export interface ForwardBackwardResult {
  /** Per datum, named outputs; `logprobs` holds log π(target_tokens[i] | prefix). */
  lossOutputs: Array<Record<string, TensorData>>;
  /** e.g. `loss:sum`. */
  metrics: Record<string, number>;
}

export interface SampledSequence {
  tokens: number[];
  /** log π(token | prefix) at temperature 1; null when the server sent none. */
  logProbs: number[] | null;
  stopReason: 'stop' | 'length';
}

/**
 * The k most likely tokens at each prompt position: [promptLength][k] ids and log-probs,
 * largest first; a position not computed (the first) holds token 0 and log-prob −99999.
 */
export interface TopkPromptLogProbs {
  k: number;
  tokenIds: number[][];
  logProbs: number[][];
}

export interface SampleResult {
  sequences: SampledSequence[];
  /** Per prompt token (null where not computed, e.g. the first), when asked for. */
  promptLogProbs: Array<number | null> | null;
  /** When asked for with topk_prompt_logprobs > 0. */
  topkPromptLogProbs?: TopkPromptLogProbs | null;
}

/** Adam settings of `optim_step`, with the service's defaults. */
export interface AdamParameters {
  /** @default 1e-4 */
  learningRate: number;
  /** @default 0.9 */
  beta1: number;
  /** @default 0.95 */
  beta2: number;
  /** @default 1e-12 */
  epsilon: number;
  /** Decoupled. @default 0 */
  weightDecay: number;
  /** Global gradient-norm clip; 0 = off. @default 0 */
  gradientClipNorm: number;
}

export const defaultAdamParameters: AdamParameters = {
  learningRate: 1e-4,
  beta1: 0.9,
  beta2: 0.95,
  epsilon: 1e-12,
  weightDecay: 0,
  gradientClipNorm: 0,
};

export interface LoraSettings {
  rank: number;
  /** Seed of the adapters' initialization. */
  seed?: number;
  /** @default true */
  trainUnembed?: boolean;
  /** @default true */
  trainMlp?: boolean;
  /** @default true */
  trainAttention?: boolean;
}

export interface SamplingParameters {
  maxTokens: number;
  /** @default 1 */
  temperature?: number;
  /** -1 = off. @default -1 */
  topK?: number;
  /** @default 1 */
  topP?: number;
  seed?: number;
  /** Stop after any of these token ids. */
  stopTokens?: number[];
  /** Stop once the text (decoded with the model's tokenizer) holds any of these. */
  stopStrings?: string[];
}
