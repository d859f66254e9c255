import { randomInt, randomUUID } from 'node:crypto';
import { loadModel } from '../../models/load.js';
import { applyWeightsDtype, type WeightsDtype } from '../../models/weights-dtype.js';
import { generate } from '../../nn/generate.js';
import { applyLora } from '../../nn/lora.js';
import type { TransformerLM } from '../../nn/transformer.js';
import { AdamW } from '../../optim/adamw.js';
import { clipGradientNorm } from '../../optim/clip.js';
import type { Tokenizer } from '../../tokenizer/types.js';
import { RandomGenerator } from '../../util/random.js';
import type {
  AdamParameters,
  Datum,
  ForwardBackwardResult,
  LoraSettings,
  SampleResult,
  SamplingParameters,
} from '../../tinker/types.js';
import { checkToken, forwardBackwardPass } from './forward-backward.js';
import { EngineUserError } from './local-losses.js';
import { promptScores, stopStringEnd } from './prompt-scores.js';
import type { WeightsSnapshot } from './weights-file.js';
import { WeightsStore } from './weights-store.js';

export { EngineUserError };

/**
 * teamtr's CPU engine behind the Tinker routes: one LoRA model per model id, each a copy of
 * one local base checkpoint with its own adapters and AdamW state, and the saved checkpoints
 * (weights-store.ts: in memory, or on disk with a state directory, so a restarted server still
 * loads and samples them; model ids then carry a per-start tag, so a new model never takes an
 * old path). The HTTP layer runs these methods one at a time, in arrival order, which is also
 * each model's seq_id order. Randomness: a seed given is used; none given draws a fresh one
 * (sampling and LoRA initialization are random unless seeded, as the service documents).
 */

interface LocalModel {
  model: TransformerLM;
  optimizer: AdamW;
  lora: LoraSettings;
  createdAt: number;
  lastRequestAt: number;
}

export interface LocalEngineOptions {
  /** Where saved weights persist across restarts (created if missing). @default none: memory only */
  stateDirectory?: string;
  /** The base model's frozen matrices (adapters stay float32). @default 'float32' */
  weightsDtype?: WeightsDtype;
  /** All saved checkpoints together. @default 4 GiB */
  maxSavedBytes?: number;
  /** num_samples of one asample. @default 64 */
  maxSamplesPerRequest?: number;
}

/** Source of a sampler: saved weights, or the untouched base model. */
export interface SamplerSource {
  modelPath?: string | null;
  baseModel?: string | null;
}

export interface SampleRequest {
  prompt: number[];
  parameters: SamplingParameters;
  numSamples: number;
  promptLogProbs?: boolean;
  topkPromptLogProbs?: number;
}

/** Engine names of the linear layers the service's train_attn / train_mlp switches cover. */
const attentionModules = [
  'queryProjection',
  'keyProjection',
  'valueProjection',
  'outputProjection',
];
const mlpModules = ['gateProjection', 'upProjection', 'downProjection'];

function freshSeed(): number {
  return randomInt(0, 2 ** 47);
}

export class LocalTinkerEngine {
  private readonly models = new Map<string, LocalModel>();
  /** Models holding saved adapters whose own model this server run does not hold, by shape. */
  private readonly samplerModels = new Map<string, TransformerLM>();
  readonly store: WeightsStore;
  private baseForSampling: TransformerLM | null = null;
  private tokenizer: Tokenizer | null = null;
  private modelCount = 0;
  private readonly modelTag: string;

  constructor(
    /** The name clients pass as base_model. */
    readonly baseModelName: string,
    /** Directory (or built-in name) of the base checkpoint. */
    readonly baseModelSource: string,
    readonly options: LocalEngineOptions = {},
  ) {
    this.store = new WeightsStore({
      directory: options.stateDirectory,
      maxBytes: options.maxSavedBytes,
    });
    this.modelTag = options.stateDirectory ? `${randomUUID().slice(0, 8)}-` : '';
  }

  private checkBase(baseModel: string): void {
    if (baseModel !== this.baseModelName)
      throw new EngineUserError(
        `unknown base_model "${baseModel}"; this server serves "${this.baseModelName}"`,
      );
  }

  private localModel(modelId: string): LocalModel {
    const found = this.models.get(modelId);
    if (!found)
      throw new EngineUserError(
        `unknown model_id "${modelId}" (create it with create_model first; models: ${[...this.models.keys()].join(', ') || 'none'})`,
      );
    found.lastRequestAt = Date.now();
    return found;
  }

  /** The base checkpoint, its frozen matrices in the server's weights dtype. */
  private async baseModel(): Promise<TransformerLM> {
    const loaded = await loadModel(this.baseModelSource);
    this.tokenizer ??= loaded.tokenizer;
    return loaded.model;
  }

  /** The base model with LoRA adapters of `lora`'s shape (initialized from `seed`). */
  private async loraModel(lora: LoraSettings, seed: number): Promise<TransformerLM> {
    const model = await this.baseModel();
    const wanted = [
      ...(lora.trainAttention !== false ? attentionModules : []),
      ...(lora.trainMlp !== false ? mlpModules : []),
    ];
    const weights = model
      .namedParameters()
      .filter(({ name }) => name.endsWith('.weight') && wanted.includes(name.split('.').at(-2)!));
    if (weights.length === 0)
      throw new EngineUserError(
        'lora_config: train_attn and train_mlp are both false; nothing to train',
      );
    const largestRank = Math.min(...weights.map(({ tensor }) => Math.min(...tensor.shape)));
    if (lora.rank > largestRank)
      throw new EngineUserError(
        `lora_config.rank ${lora.rank} is more than this model's smallest adapted dimension; give a rank from 1 to ${largestRank}`,
      );
    // The local engine has no adapter on the unembedding: train_unembed is accepted but has no effect.
    applyLora(model, {
      rank: lora.rank,
      alpha: 2 * lora.rank,
      targetModules: [...new Set(weights.map(({ name }) => name.split('.').at(-2)!))],
      random: new RandomGenerator(seed),
    });
    applyWeightsDtype(model, this.options.weightsDtype, {
      trainsFully: false,
      where: '--weights-dtype',
    });
    return model;
  }

  async createModel(baseModel: string, lora: LoraSettings): Promise<string> {
    this.checkBase(baseModel);
    const model = await this.loraModel(lora, lora.seed ?? freshSeed());
    const optimizer = new AdamW(model.trainableParameters(), {
      learningRate: 1e-4,
      beta1: 0.9,
      beta2: 0.95,
      epsilon: 1e-12,
      weightDecay: 0,
    });
    const modelId = `local-model-${this.modelTag}${this.modelCount++}`;
    const now = Date.now();
    this.models.set(modelId, { model, optimizer, lora, createdAt: now, lastRequestAt: now });
    return modelId;
  }

  /** Forgets a model (its saved checkpoints stay). */
  unloadModel(modelId: string): void {
    this.localModel(modelId);
    this.models.delete(modelId);
  }

  info(modelId: string) {
    const { lora, lastRequestAt } = this.localModel(modelId);
    return { modelName: this.baseModelName, loraRank: lora.rank, lora, lastRequestAt };
  }

  /** Models of this server run, and the runs its saved checkpoints came from. */
  trainingRuns(): Array<{ modelId: string; lora: LoraSettings; lastRequestAt: number }> {
    const runs = new Map<string, { modelId: string; lora: LoraSettings; lastRequestAt: number }>();
    for (const entry of this.store.list())
      runs.set(entry.modelId, {
        modelId: entry.modelId,
        lora: entry.lora,
        lastRequestAt: entry.createdAt,
      });
    for (const [modelId, local] of this.models)
      runs.set(modelId, { modelId, lora: local.lora, lastRequestAt: local.lastRequestAt });
    return [...runs.values()];
  }

  /**
   * Log-probs of every datum's target tokens and, unless forwardOnly, the loss's gradient
   * accumulated into the adapters. Losses are sums over tokens, as the service defines them.
   */
  forwardBackward(
    modelId: string,
    data: Datum[],
    lossFunction: string,
    forwardOnly: boolean,
  ): ForwardBackwardResult {
    return forwardBackwardPass(this.localModel(modelId).model, data, lossFunction, forwardOnly);
  }

  /** One AdamW step from the accumulated gradients, then the gradients are cleared. */
  optimStep(modelId: string, adam: AdamParameters): Record<string, number> {
    const { model, optimizer } = this.localModel(modelId);
    optimizer.settings = {
      learningRate: adam.learningRate,
      beta1: adam.beta1,
      beta2: adam.beta2,
      epsilon: adam.epsilon,
      weightDecay: adam.weightDecay,
    };
    const parameters = model.trainableParameters();
    const { norm, scale } = clipGradientNorm(parameters, adam.gradientClipNorm);
    optimizer.update({ gradientScale: scale });
    model.zeroGrad();
    return { 'optim/grad_norm': norm };
  }

  private snapshot(modelId: string): WeightsSnapshot {
    const { model, optimizer } = this.localModel(modelId);
    return {
      modelId,
      parameters: model.trainableParameters().map(({ tensor }) => tensor.data.slice()),
      optimizer: optimizer.stateDict(),
    };
  }

  /**
   * Saves `modelId`'s adapters (and optimizer state) as `tinker://<model>/<kind>/<name>`.
   * `ttlSeconds`: gone after that long; `ephemeral`: memory only, the latest few kept.
   */
  saveWeights(
    modelId: string,
    name: string,
    kind: 'weights' | 'sampler_weights',
    options: { ttlSeconds?: number | null; overwrite?: boolean; ephemeral?: boolean } = {},
  ): string {
    const weightsPath = `tinker://${modelId}/${kind}/${name}`;
    const now = Date.now();
    return this.store.save(
      {
        path: weightsPath,
        modelId,
        name,
        kind,
        baseModel: this.baseModelName,
        lora: this.localModel(modelId).lora,
        createdAt: now,
        expiresAt: options.ttlSeconds ? now + options.ttlSeconds * 1000 : null,
        ephemeral: options.ephemeral ?? false,
      },
      this.snapshot(modelId),
      { overwrite: options.overwrite ?? false },
    ).path;
  }

  loadWeights(modelId: string, path: string, withOptimizer: boolean): void {
    const { snapshot } = this.store.load(path);
    const { model, optimizer } = this.localModel(modelId);
    setAdapters(model, snapshot, `"${path}" holds adapters of another shape than model ${modelId}`);
    if (withOptimizer) optimizer.loadStateDict(snapshot.optimizer);
    model.zeroGrad();
  }

  /** Checks a sampler's source now, so create_sampling_session fails rather than asample. */
  checkSamplerSource(source: SamplerSource): void {
    if (source.modelPath) this.store.load(source.modelPath);
    else if (source.baseModel) this.checkBase(source.baseModel);
    else throw new EngineUserError('give model_path or base_model');
  }

  /**
   * The model to sample `source` with, and how to put it back: saved adapters are swapped into
   * their own model when this run holds it, else into a model of their shape kept for sampling.
   */
  private async samplingModel(
    source: SamplerSource,
  ): Promise<{ model: TransformerLM; restore: () => void }> {
    if (!source.modelPath) {
      this.checkBase(source.baseModel ?? '');
      if (!this.baseForSampling) {
        this.baseForSampling = await this.baseModel();
        applyWeightsDtype(this.baseForSampling, this.options.weightsDtype, {
          trainsFully: false,
          where: '--weights-dtype',
        });
      }
      return { model: this.baseForSampling, restore: () => undefined };
    }
    const { entry, snapshot } = this.store.load(source.modelPath);
    const live = this.models.get(snapshot.modelId)?.model;
    const key = JSON.stringify(entry.lora);
    let model = live ?? this.samplerModels.get(key);
    if (!model) {
      model = await this.loraModel(entry.lora, 0);
      this.samplerModels.set(key, model);
    }
    const current = model.trainableParameters().map(({ tensor }) => tensor.data.slice());
    setAdapters(model, snapshot, `"${source.modelPath}" does not fit its model's adapters`);
    const held = model;
    return {
      model: held,
      restore: () =>
        held.trainableParameters().forEach(({ tensor }, index) => tensor.data.set(current[index]!)),
    };
  }

  /**
   * Samples from `source`; log-probs are the model's own at temperature 1, as the service
   * reports them. Stop strings end a sample after the token that completes one.
   */
  async sample(source: SamplerSource, request: SampleRequest): Promise<SampleResult> {
    const { prompt, parameters, numSamples } = request;
    const limit = this.options.maxSamplesPerRequest ?? 64;
    if (numSamples > limit)
      throw new EngineUserError(
        `num_samples ${numSamples} is more than this server's limit of ${limit} per request; send several requests`,
      );
    if (prompt.length === 0) throw new EngineUserError('prompt: needs at least one token');
    const { model, restore } = await this.samplingModel(source);
    try {
      prompt.forEach((token) => checkToken(model, token, 'prompt'));
      const room = model.config.maxPositions - prompt.length;
      if (parameters.maxTokens > room)
        throw new EngineUserError(
          `sampling_params.max_tokens ${parameters.maxTokens} does not fit: the prompt has ${prompt.length} tokens and the context is ${model.config.maxPositions}; ask for at most ${Math.max(0, room)}`,
        );
      const seed = parameters.seed ?? freshSeed();
      const sequences = generate(model, {
        prompts: Array.from({ length: numSamples }, () => prompt),
        maxNewTokens: parameters.maxTokens,
        random: Array.from({ length: numSamples }, (_value, index) =>
          index === 0 ? new RandomGenerator(seed) : new RandomGenerator(`${seed}:${index}`),
        ),
        temperature: parameters.temperature ?? 1,
        topK: parameters.topK !== undefined && parameters.topK > 0 ? parameters.topK : 0,
        topP: parameters.topP ?? 1,
        stopTokens: parameters.stopTokens,
        vocabularyLimit: Math.min(this.tokenizer!.vocabSize, model.config.vocabSize),
      });
      const stops = parameters.stopStrings ?? [];
      const topK = request.topkPromptLogProbs ?? 0;
      const scores = request.promptLogProbs || topK > 0 ? promptScores(model, prompt, topK) : null;
      return {
        sequences: sequences.map((sequence) => {
          const end = stopStringEnd(sequence.tokens, stops, (tokens) =>
            this.tokenizer!.decode(tokens),
          );
          return {
            tokens: end === null ? sequence.tokens : sequence.tokens.slice(0, end),
            // float32, as the wire carries them, so local and served results are identical.
            logProbs: sequence.logProbs.slice(0, end ?? undefined).map(Math.fround),
            stopReason: end === null ? sequence.finishReason : 'stop',
          };
        }),
        promptLogProbs: request.promptLogProbs ? scores!.logProbs : null,
        topkPromptLogProbs: scores?.topK ?? null,
      };
    } finally {
      restore();
    }
  }
}

function setAdapters(model: TransformerLM, snapshot: WeightsSnapshot, mismatch: string): void {
  const parameters = model.trainableParameters();
  if (
    parameters.length !== snapshot.parameters.length ||
    parameters.some(({ tensor }, index) => tensor.size !== snapshot.parameters[index]!.length)
  )
    throw new EngineUserError(mismatch);
  parameters.forEach(({ tensor }, index) => tensor.data.set(snapshot.parameters[index]!));
}
