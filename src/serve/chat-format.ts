import type { TokenLogprob } from './generation.js';
import { normalizeRequest, type NormalizedRequest } from './protocol.js';
import {
  errorBody,
  logprobEntries,
  sseFrame,
  wireId,
  type ServedResult,
  type StreamWriter,
  type WireFormat,
} from './wire.js';

/**
 * The answers of `/v1/chat/completions` and `/v1/completions`: whole bodies, and stream chunks
 * ending with `data: [DONE]`. A served model's extra fields (a team's turns under `teamtr`)
 * go on its choice: on the choice of a whole body, on the finishing chunk of a stream.
 */

const usageOf = (result: ServedResult) => ({
  prompt_tokens: result.promptTokens,
  completion_tokens: result.completionTokens,
  total_tokens: result.promptTokens + result.completionTokens,
});

function legacyLogprobs(logprobs: readonly TokenLogprob[]): unknown {
  let offset = 0;
  return {
    tokens: logprobs.map((entry) => entry.text),
    token_logprobs: logprobs.map((entry) => entry.logprob),
    top_logprobs: logprobs.map((entry) =>
      Object.fromEntries(entry.top.map((alternative) => [alternative.text, alternative.logprob])),
    ),
    text_offset: logprobs.map((entry) => {
      const at = offset;
      offset += entry.text.length;
      return at;
    }),
  };
}

/** The `logprobs` field of a choice: in the request's format, or null when not asked for. */
function logprobsBody(
  request: NormalizedRequest,
  logprobs: readonly TokenLogprob[] | null | undefined,
): unknown {
  if (!request.logprobs || !logprobs) return null;
  return request.kind === 'chat' ? { content: logprobEntries(logprobs) } : legacyLogprobs(logprobs);
}

/** The non-streamed response body. */
export function responseBody(
  request: NormalizedRequest,
  id: string,
  created: number,
  results: readonly ServedResult[],
): unknown {
  const choices = results.map((result, index) => {
    const logprobs = logprobsBody(request, result.logprobs);
    const answer =
      request.kind === 'chat'
        ? { message: { role: 'assistant', content: result.text } }
        : { text: result.text };
    return { index, ...answer, logprobs, finish_reason: result.finishReason, ...result.extra };
  });
  const completionTokens = results.reduce((total, result) => total + result.completionTokens, 0);
  return {
    id,
    object: request.kind === 'chat' ? 'chat.completion' : 'text_completion',
    created,
    model: request.model,
    choices,
    usage: {
      prompt_tokens: results[0]!.promptTokens,
      completion_tokens: completionTokens,
      total_tokens: results[0]!.promptTokens + completionTokens,
    },
  };
}

/** One streamed chunk: a text delta, or the final chunk with the finish reason. */
export function chunkBody(
  request: NormalizedRequest,
  id: string,
  created: number,
  delta: {
    text?: string;
    role?: boolean;
    /** The finishing chunk: its reason, and the answer's extra fields. */
    finish?: ServedResult;
    /** The log-probs of the tokens behind this delta, when the request asked for them. */
    logprobs?: readonly TokenLogprob[];
  },
): unknown {
  const finish = delta.finish?.finishReason ?? null;
  const logprobs = logprobsBody(request, delta.logprobs);
  const choice =
    request.kind === 'chat'
      ? {
          index: 0,
          delta: {
            ...(delta.role ? { role: 'assistant' } : {}),
            ...(delta.text !== undefined ? { content: delta.text } : {}),
          },
          logprobs,
          finish_reason: finish,
        }
      : { index: 0, text: delta.text ?? '', logprobs, finish_reason: finish };
  return {
    id,
    object: request.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model: request.model,
    choices: [{ ...choice, ...delta.finish?.extra }],
  };
}

/** The usage chunk sent last when `stream_options.include_usage` is set. */
function usageChunkBody(
  request: NormalizedRequest,
  id: string,
  created: number,
  result: ServedResult,
): unknown {
  return {
    id,
    object: request.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model: request.model,
    choices: [],
    usage: usageOf(result),
  };
}

function answerOf(request: NormalizedRequest, prefix: string) {
  const id = wireId(prefix);
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Parameters<typeof chunkBody>[3]) =>
    sseFrame(chunkBody(request, id, created, delta));
  const stream: StreamWriter = {
    start: () => (request.kind === 'chat' ? [chunk({ role: true, text: '' })] : []),
    delta: (text, logprobs) => [chunk({ text, logprobs })],
    end: (result) => [
      chunk({ finish: result }),
      ...(request.includeUsage ? [sseFrame(usageChunkBody(request, id, created, result))] : []),
      'data: [DONE]\n\n',
    ],
    error: (message, type) => [sseFrame(errorBody(message, type)), 'data: [DONE]\n\n'],
  };
  return {
    body: (results: readonly ServedResult[]) => responseBody(request, id, created, results),
    stream,
  };
}

/** POST /v1/chat/completions. */
export const chatCompletionsFormat: WireFormat = {
  path: '/v1/chat/completions',
  parse: (raw) => normalizeRequest('chat', raw),
  answer: (request) => answerOf(request, 'chatcmpl-'),
};

/** POST /v1/completions (the legacy text completions). */
export const completionsFormat: WireFormat = {
  path: '/v1/completions',
  parse: (raw) => normalizeRequest('completion', raw),
  answer: (request) => answerOf(request, 'cmpl-'),
};
