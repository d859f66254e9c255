import { randomInt } from 'node:crypto';
import { chatPromptIds } from '../models/chat.js';
import type { GenerationDefaults } from '../models/huggingface/generation-config.js';
import type { TransformerLM } from '../nn/transformer.js';
import { encodeWithBos } from '../tokenizer/encode-with-bos.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { RandomGenerator } from '../util/random.js';
import { generateText, type DeltaListener } from './generation.js';
import { RequestError, type NormalizedRequest } from './protocol.js';
import type { ServedResult } from './wire.js';

/**
 * What the server exposes under a model id: one local model, or a whole team (team-endpoint.ts).
 * The server knows only this interface.
 */
export interface ServedModel {
  readonly id: string;
  /**
   * The request's `n` answers, in order. `onDelta` receives the text of a streamed request (n
   * is then 1) as it is generated; `signal` aborts when the client goes away.
   */
  complete(
    request: NormalizedRequest,
    events: { onDelta: DeltaListener; signal: AbortSignal },
  ): Promise<ServedResult[]>;
}

/** The seed of a request: the client's (reproducible), otherwise a fresh one. */
export function requestSeed(request: NormalizedRequest): number {
  return request.seed ?? randomInt(2 ** 47);
}

export interface ModelEndpointOptions {
  id: string;
  model: TransformerLM;
  tokenizer: Tokenizer;
  generation?: GenerationDefaults | null;
  /**
   * How chat messages become a prompt: the tokenizer's chat template, or plain text (what team
   * agents are trained on). @default 'chat-template' (plain when the tokenizer has none)
   */
  promptFormat?: 'chat-template' | 'plain';
  /** Completion length when the request gives none. @default 256 */
  defaultMaxTokens?: number;
  /** Temperature when the request gives none. @default the model's generation_config, else 1 */
  defaultTemperature?: number;
  /**
   * Token ids that end a completion (not part of its text). @default EOS and the stop ids of
   * the model's generation_config
   */
  stopTokenIds?: readonly number[];
  /** Strings that end every completion, besides the request's own `stop`. @default none */
  stopStrings?: readonly string[];
}

/** One sample of the model for `request`, from `random`. */
type Sampler = (
  request: NormalizedRequest,
  random: RandomGenerator,
  events: { onDelta: DeltaListener; signal: AbortSignal },
) => Promise<ServedResult>;

export function modelEndpoint(options: ModelEndpointOptions): ServedModel {
  const sample = modelSampler(options);
  return {
    id: options.id,
    async complete(request, events) {
      // Sample i of a seeded request draws from seed + i: each is reproducible alone.
      const seed = request.seed;
      const results: ServedResult[] = [];
      for (let index = 0; index < request.n; index++)
        results.push(
          await sample(
            request,
            new RandomGenerator(seed === null ? requestSeed(request) : seed + index),
            events,
          ),
        );
      return results;
    },
  };
}

/** The prompt's token ids, refused with 400 when it leaves no room in the model's context. */
function promptIdsFor(options: ModelEndpointOptions, request: NormalizedRequest): number[] {
  const { model, tokenizer } = options;
  const promptIds =
    request.kind === 'chat'
      ? chatPromptIds(tokenizer, request.messages, { plain: options.promptFormat === 'plain' })
      : encodeWithBos(tokenizer, request.prompt);
  if (promptIds.length >= model.config.maxPositions) {
    throw new RequestError(
      400,
      `the prompt has ${promptIds.length} tokens; this model's context is ${model.config.maxPositions}`,
      request.kind === 'chat' ? 'messages' : 'prompt',
      'context_length_exceeded',
    );
  }
  const room = model.config.maxPositions - promptIds.length;
  if (request.maxTokens !== null && request.maxTokens > room)
    throw new RequestError(
      400,
      `max_tokens is ${request.maxTokens}, but after the prompt's ${promptIds.length} tokens this model has room for ${room} (context ${model.config.maxPositions}); ask for at most ${room}`,
      'max_tokens',
      'context_length_exceeded',
    );
  return promptIds;
}

function modelSampler(options: ModelEndpointOptions): Sampler {
  const { model, tokenizer, generation } = options;
  const stopTokenIds = options.stopTokenIds ?? [
    ...new Set([
      ...(tokenizer.eosId !== undefined ? [tokenizer.eosId] : []),
      ...(generation?.stopTokenIds ?? []),
    ]),
  ];
  const stopStrings = options.stopStrings ?? [];
  return async (request, random, events) => {
    const promptIds = promptIdsFor(options, request);
    const room = model.config.maxPositions - promptIds.length;
    const result = await generateText(
      model,
      tokenizer,
      promptIds,
      {
        maxNewTokens: Math.min(
          room,
          request.maxTokens ?? generation?.maxNewTokens ?? options.defaultMaxTokens ?? 256,
        ),
        temperature:
          request.temperature ?? options.defaultTemperature ?? generation?.temperature ?? 1,
        topP: request.topP ?? generation?.topP ?? 1,
        topK: request.topK ?? generation?.topK ?? 0,
        stopTokenIds,
        stopStrings: [...stopStrings, ...request.stop],
        random,
        topLogprobs: request.topLogprobs,
      },
      events,
    );
    return {
      text: result.text,
      finishReason: result.finishReason,
      promptTokens: promptIds.length,
      completionTokens: result.tokens.length,
      logprobs: result.logprobs,
    };
  };
}
