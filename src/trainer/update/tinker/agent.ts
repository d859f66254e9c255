import { randomUUID, createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { chatPromptIds } from '../../../models/chat.js';
import { resolveModelSpec } from '../../../models/load.js';
import type { ScoringItem } from '../../../nn/score.js';
import { chatMessages } from '../../../team/chat-view.js';
import {
  TokenizingPolicy,
  TurnDecoder,
  type Completion,
  type CompletionRequest,
  type CompletionSettings,
} from '../../../team/policy.js';
import { TinkerClient } from '../../../tinker/client.js';
import type { TinkerSampler } from '../../../tinker/sampler.js';
import type { TinkerTrainingModel } from '../../../tinker/training-model.js';
import type { Datum } from '../../../tinker/types.js';
import { loadHuggingFaceTokenizer } from '../../../tokenizer/huggingface-files.js';
import { loadTokenizer } from '../../../tokenizer/load.js';
import type { Tokenizer } from '../../../tokenizer/types.js';
import { ConfigError, TeamtrError } from '../../../util/errors.js';
import type { TinkerEngineConfig } from '../../config/tinker-engine.js';

/**
 * One agent's model on a Tinker service: its client session, its LoRA training model, and the
 * sampler that plays its turns. Any change of the weights (a step, an undo, a restore) makes
 * the sampler stale; the next turn saves the weights for sampling and opens a new one, so
 * turns are always sampled by the weights being trained.
 */
export class TinkerAgent {
  private sampler: TinkerSampler | null = null;
  private savedNames = 0;
  /** Distinguishes this process's saved weights from earlier runs' (names are never reused). */
  private readonly nonce = randomUUID().slice(0, 8);

  private constructor(
    readonly name: string,
    readonly settings: TinkerEngineConfig,
    private client: TinkerClient,
    public model: TinkerTrainingModel,
    readonly loraSeed: number,
  ) {}

  /** Opens a session and creates the agent's LoRA model on the service. */
  static async connect(options: {
    name: string;
    settings: TinkerEngineConfig;
    runSeed: number;
    environment?: Record<string, string | undefined>;
  }): Promise<TinkerAgent> {
    const { settings } = options;
    const client = await TinkerClient.connect({
      baseURL: settings.baseURL,
      apiKeyEnv: settings.apiKeyEnv,
      timeoutMs: settings.timeoutSeconds * 1000,
      maxRetries: settings.retries,
      futureTimeoutMs: settings.futureTimeoutSeconds * 1000,
      tags: ['teamtr', options.name],
      environment: options.environment,
    });
    const loraSeed = settings.lora.seed ?? derivedSeed(`${options.runSeed}/lora/${options.name}`);
    const model = await client.createTrainingModel({
      baseModel: settings.baseModel,
      lora: { rank: settings.lora.rank, seed: loraSeed },
    });
    return new TinkerAgent(options.name, settings, client, model, loraSeed);
  }

  /** A fresh name for saved weights (`<agent>-<nonce>-<n>-<label>`). */
  weightsName(label: string): string {
    return `${this.name}-${this.nonce}-${this.savedNames++}-${label}`;
  }

  /** The weights changed on the service: the next turn samples from a new sampler. */
  weightsChanged(): void {
    this.sampler = null;
  }

  async currentSampler(): Promise<TinkerSampler> {
    if (!this.sampler) {
      const modelPath = await this.model.saveWeightsForSampler(this.weightsName('sampler'));
      this.sampler = await this.client.createSampler({ modelPath });
    }
    return this.sampler;
  }

  /** Saves weights and optimizer state; the `tinker://` path restores them (loadWeights). */
  async saveWeights(label: string): Promise<string> {
    return this.model.saveWeights(this.weightsName(label));
  }

  async loadWeights(weightsPath: string, options: { optimizer: boolean }): Promise<void> {
    await this.model.loadWeights(weightsPath, options);
    this.weightsChanged();
  }

  /** log π(token | prefix) of every completion token of `items`, item by item, by one forward. */
  async completionLogProbs(items: readonly ScoringItem[]): Promise<Float32Array[]> {
    if (items.length === 0) return [];
    const result = await this.model.forward(
      items.map((item) => scoringDatum(item)),
      'cross_entropy',
    );
    return result.lossOutputs.map((outputs, index) => {
      const values = outputs.logprobs?.data;
      const count = items[index]!.completion.length;
      if (!values || values.length < count)
        throw new TeamtrError(
          `Tinker forward for agent "${this.name}": the service returned ${values?.length ?? 0} log-probs for a datum of ${scoringDatum(items[index]!).inputTokens.length} tokens`,
        );
      return Float32Array.from(values.slice(values.length - count));
    });
  }

  close(): void {
    this.client.close();
  }
}

/**
 * A datum scoring `item`: input = context + completion minus its last token, targets = the
 * same shifted by one, so the last completion.length outputs are the completion's log-probs.
 */
export function scoringDatum(item: ScoringItem, lossInputs: Datum['lossInputs'] = {}): Datum {
  const sequence = [...item.context, ...item.completion];
  const inputTokens = sequence.slice(0, -1);
  return {
    inputTokens,
    lossInputs: {
      target_tokens: { dtype: 'int64', data: sequence.slice(1), shape: [inputTokens.length] },
      ...lossInputs,
    },
  };
}

/** A uint31 seed from a string (the service takes integer seeds). */
function derivedSeed(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32LE(0) & 0x7fffffff;
}

/** The tokenizer of a local model directory or built-in model, without loading its weights. */
export async function loadAgentTokenizer(spec: string, where: string): Promise<Tokenizer> {
  const directory = resolveModelSpec(spec);
  if (existsSync(path.join(directory, 'tokenizer_config.json')))
    return loadHuggingFaceTokenizer(directory);
  const file = path.join(directory, 'tokenizer.json');
  if (!existsSync(file))
    throw new ConfigError(
      where,
      `"${spec}" has no tokenizer.json (looked in ${directory}); name a local model directory or builtin:<task>/<role> whose tokenizer is the service's base model's`,
    );
  return loadTokenizer(file);
}

/**
 * The policy of a Tinker-backed agent: its input is rendered and tokenized here, its turn is
 * sampled by the service with per-token log-probs (temperature 1 log-probs, as the service
 * reports them), and its tokens are decoded here — never re-tokenized.
 */
export class TinkerPolicy extends TokenizingPolicy {
  readonly model = null;
  private readonly turns: TurnDecoder;

  constructor(
    readonly agent: TinkerAgent,
    tokenizer: Tokenizer,
  ) {
    super(tokenizer);
    this.turns = new TurnDecoder(tokenizer);
  }

  async complete(
    requests: readonly CompletionRequest[],
    settings: CompletionSettings,
  ): Promise<Completion[]> {
    const sampler = await this.agent.currentSampler();
    const results: Completion[] = new Array(requests.length);
    let next = 0;
    const worker = async () => {
      while (next < requests.length) {
        const index = next++;
        results[index] = await this.completeOne(sampler, requests[index]!, settings);
      }
    };
    const workers = Math.min(this.agent.settings.concurrency, requests.length);
    await Promise.all(Array.from({ length: workers }, worker));
    return results;
  }

  private async completeOne(
    sampler: TinkerSampler,
    request: CompletionRequest,
    settings: CompletionSettings,
  ): Promise<Completion> {
    const inputIds =
      this.turns.chat && request.view
        ? chatPromptIds(this.tokenizer, chatMessages(request.view))
        : this.encodeInput(request.input);
    const result = await sampler.sample({
      prompt: inputIds,
      parameters: {
        maxTokens: settings.maxNewTokens,
        temperature: settings.temperature ?? 1,
        seed: request.random.nextUint32() & 0x7fffffff,
        stopTokens: this.turns.stopIds,
      },
    });
    const sequence = result.sequences[0];
    if (!sequence || !sequence.logProbs || sequence.logProbs.length !== sequence.tokens.length)
      throw new TeamtrError(
        `Tinker sampler of agent "${this.agent.name}": the answer has no per-token log-probs for every sampled token; the trust region needs them (use a service that returns sampled log-probs)`,
      );
    return this.turns.completion(inputIds, sequence.tokens, sequence.logProbs, {
      finishReason: sequence.stopReason,
      stop: settings.stop,
    });
  }
}
