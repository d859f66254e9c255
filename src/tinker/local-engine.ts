import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { loadModel } from '../models/load.js';
import { generate } from '../nn/generate.js';
import { applyLora } from '../nn/lora.js';
import type { TransformerLM } from '../nn/transformer.js';
import { AdamW } from '../optim/adamw.js';
import { clipGradientNorm } from '../optim/clip.js';
import { gatherLogProbs, noGrad, sumOfProducts, tidy } from '../tensor/index.js';
import { RandomGenerator } from '../util/random.js';
import { EngineUserError, lossCoefficients, type LossEvaluation } from './local-losses.js';
import { readWeightsFile, writeWeightsFile, type WeightsSnapshot } from './weights-file.js';

export { EngineUserError };
import type {
  AdamParameters,
  Datum,
  ForwardBackwardResult,
  LoraSettings,
  SampleResult,
  SamplingParameters,
} from './types.js';

/**
 * teamtr's CPU engine behind the Tinker routes: one LoRA model per model id, each a copy of
 * one local base checkpoint with its own adapters and AdamW state; saved weights kept by
 * `tinker://` path in memory (they live as long as the server) and, with a state directory,
 * also on disk, one file per path written atomically, so a restarted server still loads them
 * (model ids then carry a per-start tag, so a new model never takes an old path). The HTTP layer (service.ts)
 * runs these methods one at a time, in arrival order, which is also each model's seq_id order.
 */

interface LocalModel {
  model: TransformerLM;
  optimizer: AdamW;
  lora: LoraSettings;
}

/** Engine names of the linear layers the service's train_attn / train_mlp switches cover. */
const attentionModules = [
  'queryProjection',
  'keyProjection',
  'valueProjection',
  'outputProjection',
];
const mlpModules = ['gateProjection', 'upProjection', 'downProjection'];

export class LocalTinkerEngine {
  private readonly models = new Map<string, LocalModel>();
  private readonly weights = new Map<string, WeightsSnapshot>();
  private baseForSampling: TransformerLM | null = null;
  private modelCount = 0;
  private readonly modelTag: string;

  constructor(
    /** The name clients pass as base_model. */
    readonly baseModelName: string,
    /** Directory (or built-in name) of the base checkpoint. */
    readonly baseModelSource: string,
    readonly options: {
      /** Where saved weights persist across restarts (created if missing). @default none: memory only */
      stateDirectory?: string;
    } = {},
  ) {
    if (options.stateDirectory) mkdirSync(options.stateDirectory, { recursive: true });
    this.modelTag = options.stateDirectory ? `${randomUUID().slice(0, 8)}-` : '';
  }

  /** The file holding the weights saved at `weightsPath` (state directory only). */
  private weightsFile(weightsPath: string): string {
    const digest = createHash('sha256').update(weightsPath).digest('hex').slice(0, 32);
    return path.join(this.options.stateDirectory!, `${digest}.weights`);
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
    return found;
  }

  async createModel(baseModel: string, lora: LoraSettings): Promise<string> {
    this.checkBase(baseModel);
    const { model } = await loadModel(this.baseModelSource);
    const present = new Set(model.namedParameters().map(({ name }) => name.split('.').at(-2)!));
    const targets = [
      ...(lora.trainAttention !== false ? attentionModules : []),
      ...(lora.trainMlp !== false ? mlpModules : []),
    ].filter((name) => present.has(name));
    if (targets.length === 0)
      throw new EngineUserError(
        'lora_config: train_attn and train_mlp are both false; nothing to train',
      );
    // The local engine has no adapter on the unembedding: train_unembed is accepted but has no effect.
    applyLora(model, {
      rank: lora.rank,
      alpha: 2 * lora.rank,
      targetModules: targets,
      random: new RandomGenerator(lora.seed ?? 0),
    });
    const optimizer = new AdamW(model.trainableParameters(), {
      learningRate: 1e-4,
      beta1: 0.9,
      beta2: 0.95,
      epsilon: 1e-12,
      weightDecay: 0,
    });
    const modelId = `local-model-${this.modelTag}${this.modelCount++}`;
    this.models.set(modelId, { model, optimizer, lora });
    return modelId;
  }

  info(modelId: string) {
    const { lora } = this.localModel(modelId);
    return { modelName: this.baseModelName, loraRank: lora.rank };
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
    const { model } = this.localModel(modelId);
    if (data.length === 0) throw new EngineUserError('data: empty batch');
    const lengths = data.map((datum) => datum.inputTokens.length);
    const length = Math.max(...lengths);
    if (length > model.config.maxPositions)
      throw new EngineUserError(
        `a datum has ${length} tokens; the model's context is ${model.config.maxPositions}`,
      );
    const batch = data.length;
    const ids = new Int32Array(batch * length);
    const keyMask = new Float32Array(batch * length);
    const total = lengths.reduce((sum, value) => sum + value, 0);
    const rows = new Int32Array(total);
    const targets = new Int32Array(total);
    let cursor = 0;
    data.forEach((datum, row) => {
      const target = datum.lossInputs.target_tokens;
      if (!target || target.data.length !== datum.inputTokens.length)
        throw new EngineUserError(
          `data[${row}].loss_fn_inputs.target_tokens: needs one target per input token (${datum.inputTokens.length})`,
        );
      datum.inputTokens.forEach((token, position) => {
        this.checkToken(model, token, `data[${row}].model_input`);
        this.checkToken(model, target.data[position]!, `data[${row}].loss_fn_inputs.target_tokens`);
        ids[row * length + position] = token;
        keyMask[row * length + position] = 1;
        rows[cursor] = row * length + position;
        targets[cursor] = target.data[position]!;
        cursor++;
      });
    });
    const run = () =>
      tidy(() => {
        const logits = model.forward({ ids, batch, length, keyMask, rows });
        const { logProbs } = gatherLogProbs(logits, targets);
        const values = logProbs.data.slice();
        const evaluation: LossEvaluation = lossCoefficients(lossFunction, data, values);
        if (!forwardOnly) sumOfProducts(logProbs, evaluation.coefficients).backward();
        return { values, loss: evaluation.loss };
      });
    const { values, loss } = forwardOnly ? noGrad(run) : run();
    let offset = 0;
    const lossOutputs = data.map((datum) => {
      const count = datum.inputTokens.length;
      const part = Array.from(values.subarray(offset, offset + count));
      offset += count;
      return { logprobs: { dtype: 'float32' as const, data: part, shape: [count] } };
    });
    return { lossOutputs, metrics: { 'loss:sum': loss } };
  }

  private checkToken(model: TransformerLM, token: number, where: string): void {
    if (!Number.isInteger(token) || token < 0 || token >= model.config.vocabSize)
      throw new EngineUserError(
        `${where}: token ${token} is outside the vocabulary (0–${model.config.vocabSize - 1})`,
      );
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

  saveWeights(modelId: string, name: string, kind: 'weights' | 'sampler_weights'): string {
    const weightsPath = `tinker://${modelId}/${kind}/${name}`;
    const snapshot = this.snapshot(modelId);
    if (this.options.stateDirectory)
      writeWeightsFile(this.weightsFile(weightsPath), weightsPath, snapshot);
    this.weights.set(weightsPath, snapshot);
    return weightsPath;
  }

  private savedWeights(weightsPath: string): WeightsSnapshot {
    const cached = this.weights.get(weightsPath);
    if (cached) return cached;
    if (this.options.stateDirectory && existsSync(this.weightsFile(weightsPath))) {
      const loaded = readWeightsFile(this.weightsFile(weightsPath), weightsPath);
      this.weights.set(weightsPath, loaded);
      return loaded;
    }
    throw new EngineUserError(
      `no saved weights at "${weightsPath}" (paths come from save_weights / save_weights_for_sampler of this server${this.options.stateDirectory ? ` or, kept in ${this.options.stateDirectory}, of its earlier runs` : ' run; start it with --state-dir to keep them across restarts'})`,
    );
  }

  loadWeights(modelId: string, path: string, withOptimizer: boolean): void {
    const saved = this.savedWeights(path);
    const { model, optimizer } = this.localModel(modelId);
    const parameters = model.trainableParameters();
    if (
      parameters.length !== saved.parameters.length ||
      parameters.some(({ tensor }, index) => tensor.size !== saved.parameters[index]!.length)
    )
      throw new EngineUserError(`"${path}" holds adapters of another shape than model ${modelId}`);
    parameters.forEach(({ tensor }, index) => tensor.data.set(saved.parameters[index]!));
    if (withOptimizer) optimizer.loadStateDict(saved.optimizer);
    model.zeroGrad();
  }

  /** Checks a sampler's source now, so create_sampling_session fails rather than asample. */
  checkSamplerSource(source: { modelPath?: string | null; baseModel?: string | null }): void {
    if (source.modelPath) this.savedWeights(source.modelPath);
    else if (source.baseModel) this.checkBase(source.baseModel);
    else throw new EngineUserError('give model_path or base_model');
  }

  /**
   * Samples with the saved weights at `modelPath` (swapped into their model for the call and
   * swapped back after) or with the untouched base model. Log-probs are the model's own at
   * temperature 1, as the service reports them.
   */
  async sample(
    source: { modelPath?: string | null; baseModel?: string | null },
    prompt: number[],
    parameters: SamplingParameters,
    numSamples: number,
  ): Promise<SampleResult> {
    this.checkSamplerSource(source);
    let model: TransformerLM;
    let restore: (() => void) | null = null;
    if (source.modelPath) {
      const saved = this.savedWeights(source.modelPath);
      if (!this.models.has(saved.modelId))
        throw new EngineUserError(
          `"${source.modelPath}" belongs to model ${saved.modelId}, which this server run does not hold (it was created before a restart); load the weights into a new model (create_model + load_weights) and save them for sampling again`,
        );
      model = this.localModel(saved.modelId).model;
      const current = model.trainableParameters().map(({ tensor }) => tensor.data.slice());
      const parameterList = model.trainableParameters();
      parameterList.forEach(({ tensor }, index) => tensor.data.set(saved.parameters[index]!));
      restore = () =>
        parameterList.forEach(({ tensor }, index) => tensor.data.set(current[index]!));
    } else {
      this.baseForSampling ??= (await loadModel(this.baseModelSource)).model;
      model = this.baseForSampling;
    }
    try {
      if (prompt.length === 0) throw new EngineUserError('prompt: needs at least one token');
      prompt.forEach((token) => this.checkToken(model, token, 'prompt'));
      const random = new RandomGenerator(parameters.seed ?? 0);
      const sequences = generate(model, {
        prompts: Array.from({ length: numSamples }, () => prompt),
        maxNewTokens: parameters.maxTokens,
        random: Array.from({ length: numSamples }, (_value, index) =>
          index === 0 ? random : new RandomGenerator(`${parameters.seed ?? 0}:${index}`),
        ),
        temperature: parameters.temperature ?? 1,
        topK: parameters.topK !== undefined && parameters.topK > 0 ? parameters.topK : 0,
        topP: parameters.topP ?? 1,
        stopTokens: parameters.stopTokens,
      });
      return {
        sequences: sequences.map((sequence) => ({
          tokens: sequence.tokens,
          // float32, as the wire carries them, so local and served results are identical.
          logProbs: sequence.logProbs.map(Math.fround),
          stopReason: sequence.finishReason,
        })),
        promptLogProbs: null,
      };
    } finally {
      restore?.();
    }
  }
}
