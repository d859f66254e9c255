import { z } from 'zod';
import type { ChatMessage } from '../models/chat.js';
import type { TokenLogprob } from './generation.js';
import { parseOr } from '../util/schema.js';
import { requestRefusal, RequestError, type NormalizedRequest } from './protocol.js';
import {
  logprobEntries,
  sseFrame,
  wireId,
  type ServedResult,
  type StreamWriter,
  type WireFormat,
} from './wire.js';

/**
 * POST /v1/responses, the OpenAI Responses API, for its text subset: `input` as a string or as
 * messages of text parts, `instructions`, `max_output_tokens`, `temperature`, `top_p`, log-probs
 * through `include: ["message.output_text.logprobs"]` and `top_logprobs`, and `stream`. It is
 * what `@ai-sdk/openai`'s default `openai(id)` calls. Nothing is stored (there is no GET of a
 * past response); tools, reasoning, conversations and structured output are refused by name.
 * `seed` is a teamtr extension, as in chat completions.
 */

const textPart = z.looseObject({
  type: z.enum(['input_text', 'output_text', 'text']),
  text: z.string(),
});

const inputItem = z.looseObject({
  type: z.string().optional(),
  role: z.string().optional(),
  content: z.unknown().optional(),
});

const refused = [
  'tools',
  'tool_choice',
  'previous_response_id',
  'conversation',
  'reasoning',
  'background',
  'prompt',
  'max_tool_calls',
] as const;

const responsesRequestSchema = z.strictObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(inputItem).min(1)]),
  instructions: z.string().nullable().optional(),
  max_output_tokens: z.number().int().positive().nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({}).nullable().optional(),
  seed: z.number().int().nullable().optional(),
  include: z.array(z.literal('message.output_text.logprobs')).nullable().optional(),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
  text: z
    .strictObject({
      format: z.looseObject({ type: z.string() }).optional(),
      verbosity: z.string().nullable().optional(),
    })
    .nullable()
    .optional(),
  truncation: z.literal('disabled').nullable().optional(),
  // Accepted and ignored: they do not change the generated text.
  store: z.boolean().nullable().optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
  user: z.string().nullable().optional(),
  service_tier: z.string().nullable().optional(),
  safety_identifier: z.string().nullable().optional(),
  prompt_cache_key: z.string().nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  ...Object.fromEntries(refused.map((field) => [field, z.unknown().optional()])),
});

type ResponsesRequest = z.output<typeof responsesRequestSchema>;

function refuseUnsupported(body: ResponsesRequest): void {
  const record = body as Record<string, unknown>;
  for (const field of refused) {
    const value = record[field];
    const empty = value === undefined || value === null || (Array.isArray(value) && !value.length);
    if (!empty && !(field === 'tool_choice' && value === 'none'))
      throw new RequestError(
        400,
        `${field}: not supported by teamtr serve (text generation only); leave it out`,
        field,
      );
  }
  const format = body.text?.format?.type;
  if (format !== undefined && format !== 'text')
    throw new RequestError(
      400,
      `text.format: only {"type": "text"} is served, got "${format}"; leave it out`,
      'text.format',
    );
}

/** A message item's text: a string, or its text parts joined. */
function itemText(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content))
    throw new RequestError(400, `${at}: give a string or an array of text parts`, at);
  return content
    .map((part: unknown, index) => {
      const parsed = textPart.safeParse(part);
      if (!parsed.success)
        throw new RequestError(
          400,
          `${at}[${index}]: only text parts (input_text, output_text) are served, got ${JSON.stringify((part as { type?: unknown } | null)?.type ?? part)}`,
          `${at}[${index}]`,
        );
      return parsed.data.text;
    })
    .join('');
}

const roles = new Set(['system', 'developer', 'user', 'assistant']);

function messagesOf(body: ResponsesRequest): ChatMessage[] {
  const messages: ChatMessage[] = body.instructions
    ? [{ role: 'system', content: body.instructions }]
    : [];
  if (typeof body.input === 'string') return [...messages, { role: 'user', content: body.input }];
  body.input.forEach((item, index) => {
    const at = `input[${index}]`;
    if ((item.type ?? 'message') !== 'message' || !roles.has(item.role ?? ''))
      throw new RequestError(
        400,
        `${at}: only messages (role system, developer, user or assistant) are served, got ${item.type ? `type "${item.type}"` : `role ${JSON.stringify(item.role)}`}`,
        at,
      );
    messages.push({ role: item.role!, content: itemText(item.content, `${at}.content`) });
  });
  return messages;
}

export function normalizeResponsesRequest(raw: unknown): NormalizedRequest {
  const body = parseOr(responsesRequestSchema, raw, requestRefusal);
  refuseUnsupported(body);
  const logprobs = body.include?.includes('message.output_text.logprobs') ?? false;
  return {
    kind: 'chat',
    model: body.model,
    messages: messagesOf(body),
    prompt: '',
    maxTokens: body.max_output_tokens ?? null,
    temperature: body.temperature ?? null,
    topP: body.top_p ?? null,
    topK: null,
    stop: [],
    stream: body.stream ?? false,
    includeUsage: false,
    seed: body.seed ?? null,
    logprobs,
    topLogprobs: logprobs ? (body.top_logprobs ?? 0) : 0,
    n: 1,
  };
}

function logprobsBody(request: NormalizedRequest, logprobs: readonly TokenLogprob[] | null) {
  return request.logprobs && logprobs ? logprobEntries(logprobs) : [];
}

const statusOf = (result: ServedResult | null) =>
  !result ? 'in_progress' : result.finishReason === 'length' ? 'incomplete' : 'completed';

function usageOf(result: ServedResult) {
  return {
    input_tokens: result.promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: result.completionTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: result.promptTokens + result.completionTokens,
  };
}

/** The response object, its message item and its text part, before (null) or after the answer. */
function responseShapes(request: NormalizedRequest) {
  const id = wireId('resp_');
  const messageId = wireId('msg_');
  const created = Math.floor(Date.now() / 1000);
  const part = (result: ServedResult) => ({
    type: 'output_text',
    text: result.text,
    annotations: [],
    logprobs: logprobsBody(request, result.logprobs),
  });
  const item = (result: ServedResult | null) => ({
    type: 'message',
    id: messageId,
    status: statusOf(result),
    role: 'assistant',
    content: result ? [part(result)] : [],
  });
  const response = (result: ServedResult | null) => ({
    id,
    object: 'response',
    created_at: created,
    status: statusOf(result),
    error: null,
    incomplete_details: result?.finishReason === 'length' ? { reason: 'max_output_tokens' } : null,
    model: request.model,
    output: result ? [item(result)] : [],
    max_output_tokens: request.maxTokens,
    temperature: request.temperature,
    top_p: request.topP,
    tools: [],
    tool_choice: 'none',
    parallel_tool_calls: false,
    text: { format: { type: 'text' } },
    truncation: 'disabled',
    store: false,
    metadata: {},
    usage: result ? usageOf(result) : null,
    ...result?.extra,
  });
  return { messageId, part, item, response };
}

function answerOf(request: NormalizedRequest) {
  const { messageId, part, item, response } = responseShapes(request);
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>) =>
    sseFrame({ type, sequence_number: sequence++, ...fields }, type);
  const place = { item_id: messageId, output_index: 0, content_index: 0 };
  const stream: StreamWriter = {
    start: () => [
      event('response.created', { response: response(null) }),
      event('response.in_progress', { response: response(null) }),
      event('response.output_item.added', { output_index: 0, item: item(null) }),
      event('response.content_part.added', {
        ...place,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      }),
    ],
    delta: (text, logprobs) => [
      event('response.output_text.delta', {
        ...place,
        delta: text,
        logprobs: logprobsBody(request, [...logprobs]),
      }),
    ],
    end: (result) => [
      event('response.output_text.done', {
        ...place,
        text: result.text,
        logprobs: logprobsBody(request, result.logprobs),
      }),
      event('response.content_part.done', { ...place, part: part(result) }),
      event('response.output_item.done', { output_index: 0, item: item(result) }),
      event(`response.${statusOf(result)}`, { response: response(result) }),
    ],
    error: (message, type) => [event('error', { code: type, message, param: null })],
  };
  return { body: (results: readonly ServedResult[]) => response(results[0]!), stream };
}

/** POST /v1/responses. */
export const responsesFormat: WireFormat = {
  path: '/v1/responses',
  parse: normalizeResponsesRequest,
  answer: answerOf,
};
