import { randomInt } from 'node:crypto';
import { chatPromptIds } from '../models/chat.js';
import type { GenerationDefaults } from '../models/huggingface/generation-config.js';
import type { TransformerLM } from '../nn/transformer.js';
import { renderForAgent } from '../team/render.js';
import type { Team } from '../team/team.js';
import { encodeWithBos } from '../tokenizer/encode-with-bos.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { RandomGenerator } from '../util/random.js';
import { generateText, type DeltaListener } from './generation.js';
import { RequestError, type NormalizedRequest, type ServedResult } from './protocol.js';

/**
 * What the server exposes under a model id: one local model, or a whole team run as a
 * pipeline. The server knows only this interface.
 */
export interface ServedModel {
  readonly id: string;
  complete(
    request: NormalizedRequest,
    events: { onDelta: DeltaListener; signal: AbortSignal },
  ): Promise<ServedResult>;
}

/** Seeded when the client sends a seed (reproducible), otherwise fresh. */
function generatorFor(request: NormalizedRequest): RandomGenerator {
  return new RandomGenerator(request.seed ?? randomInt(2 ** 47));
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
}

export function modelEndpoint(options: ModelEndpointOptions): ServedModel {
  const { model, tokenizer, generation } = options;
  const stopTokenIds = [
    ...new Set([
      ...(tokenizer.eosId !== undefined ? [tokenizer.eosId] : []),
      ...(generation?.stopTokenIds ?? []),
    ]),
  ];
  return {
    id: options.id,
    async complete(request, events) {
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
      const result = await generateText(
        model,
        tokenizer,
        promptIds,
        {
          maxNewTokens: Math.min(
            room,
            request.maxTokens ?? generation?.maxNewTokens ?? options.defaultMaxTokens ?? 256,
          ),
          temperature: request.temperature ?? generation?.temperature ?? 1,
          topP: request.topP ?? generation?.topP ?? 1,
          topK: request.topK ?? generation?.topK ?? 0,
          stopTokenIds,
          stopStrings: request.stop,
          random: generatorFor(request),
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
    },
  };
}

export interface TeamTurn {
  agent: string;
  text: string;
}

/**
 * One episode of the team on `prompt`: every turn of the protocol in its fixed order, each
 * agent reading the shared context rendered as in training. Returns the turns and the
 * answer turn's text.
 */
export async function runTeamPipeline(
  team: Team,
  prompt: string,
  options: {
    temperature: number;
    random: RandomGenerator;
    signal?: AbortSignal;
    /** Longest turn, if shorter than the protocol's (a request's max_tokens). */
    maxTurnTokens?: number;
  },
): Promise<{ turns: TeamTurn[]; answer: string; generatedTokens: number; inputTokens: number }> {
  const spoken: Array<{ agentIndex: number; text: string }> = [];
  const turns: TeamTurn[] = [];
  let generatedTokens = 0;
  let inputTokens = 0;
  const maxNewTokens = Math.min(team.protocol.maxTurnTokens, options.maxTurnTokens ?? Infinity);
  for (const agentIndex of team.protocol.turnOrder) {
    if (options.signal?.aborted) throw new RequestError(499, 'the client went away');
    const agent = team.agents[agentIndex]!;
    const [completion] = await agent.policy.complete(
      [
        {
          ...renderForAgent(team, agentIndex, prompt, spoken),
          random: options.random.split(`turn-${turns.length}`),
        },
      ],
      { maxNewTokens, temperature: options.temperature },
    );
    spoken.push({ agentIndex, text: completion!.text });
    turns.push({ agent: agent.name, text: completion!.text });
    generatedTokens += completion!.generatedTokenCount ?? completion!.tokens.length;
    inputTokens += completion!.inputIds.length;
  }
  return { turns, answer: turns[team.protocol.answerTurn]!.text, generatedTokens, inputTokens };
}

/**
 * The whole team under one id: the last user message is the problem; the reply is the answer
 * turn, with every turn under `teamtr.turns`. Greedy unless the request sets a temperature.
 */
export function teamEndpoint(id: string, team: Team): ServedModel {
  return {
    id,
    async complete(request, events) {
      const prompt =
        request.kind === 'chat'
          ? ([...request.messages].reverse().find((message) => message.role === 'user')?.content ??
            '')
          : request.prompt;
      if (prompt.length === 0)
        throw new RequestError(400, 'the team needs a user message with the problem', 'messages');
      // max_tokens bounds every agent's turn; usage counts what all agents read and wrote.
      const episode = await runTeamPipeline(team, prompt, {
        temperature: request.temperature ?? 0,
        random: generatorFor(request),
        signal: events.signal,
        maxTurnTokens: request.maxTokens ?? undefined,
      });
      events.onDelta(episode.answer, []);
      return {
        text: episode.answer,
        finishReason: 'stop',
        promptTokens: episode.inputTokens,
        completionTokens: episode.generatedTokens,
        logprobs: null,
        extra: { teamtr: { turns: episode.turns } },
      };
    },
  };
}
