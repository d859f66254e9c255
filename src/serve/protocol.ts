import { z } from 'zod';
import type { ChatMessage } from '../models/chat.js';
import { TeamtrError } from '../util/errors.js';
import { parseOr } from '../util/schema.js';

/**
 * OpenAI requests, as far as teamtr serves them: `/v1/chat/completions` and `/v1/completions`
 * (`/v1/responses` in responses.ts), validated here and normalized into the one shape every
 * served model reads; their answers are written by chat-format.ts. Fields teamtr cannot
 * honour (n > 1, penalties, echo) are refused with a message rather than silently ignored;
 * fields that do not change the result (user, metadata) are accepted and ignored.
 */

/** A request the client got wrong: HTTP 4xx with an OpenAI-style error body. */
export class RequestError extends TeamtrError {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

const optionalNumber = z.number().nullable().optional();
const stopSchema = z
  .union([z.string(), z.array(z.string().min(1)).max(8)])
  .nullable()
  .optional();
/** Fields that change what a client expects back; accepting and ignoring them would mislead. */
const unsupportedFields = [
  'tools',
  'tool_choice',
  'functions',
  'function_call',
  'parallel_tool_calls',
  'response_format',
  'logit_bias',
  'suffix',
  'best_of',
  'audio',
  'modalities',
  'prediction',
] as const;

const sharedFields = {
  model: z.string().min(1),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  top_k: z.number().int().min(-1).nullable().optional(),
  n: z.number().int().nullable().optional(),
  stop: stopSchema,
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  seed: z.number().int().nullable().optional(),
  frequency_penalty: optionalNumber,
  presence_penalty: optionalNumber,
  // Accepted and ignored: they do not change the generated text.
  user: z.string().nullable().optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
  store: z.boolean().nullable().optional(),
  service_tier: z.string().nullable().optional(),
  // Refused by name when set (see unsupportedFields), so they are known here.
  ...Object.fromEntries(unsupportedFields.map((field) => [field, z.unknown().optional()])),
};

/** Message roles a chat template renders; anything else (a typo, "wizard") is refused. */
const roleSchema = z.enum(['system', 'developer', 'user', 'assistant']);

const contentSchema = z
  .union([z.string(), z.array(z.looseObject({ type: z.literal('text'), text: z.string() }))])
  .nullable();

export const chatRequestSchema = z.strictObject({
  ...sharedFields,
  messages: z
    .array(
      z.strictObject({
        role: roleSchema,
        content: contentSchema,
        name: z.string().optional(),
      }),
    )
    .min(1),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
});

export const completionRequestSchema = z.strictObject({
  ...sharedFields,
  prompt: z.union([z.string(), z.array(z.string()).length(1)]),
  max_tokens: z.number().int().positive().nullable().optional(),
  logprobs: z.number().int().min(0).max(20).nullable().optional(),
  echo: z.boolean().nullable().optional(),
});

export interface NormalizedRequest {
  kind: 'chat' | 'completion';
  model: string;
  messages: ChatMessage[];
  /** The raw prompt of a completion request. */
  prompt: string;
  maxTokens: number | null;
  temperature: number | null;
  topP: number | null;
  topK: number | null;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
  seed: number | null;
  logprobs: boolean;
  topLogprobs: number;
  /** Samples to return; sample i draws from seed + i when a seed is given. */
  n: number;
}

/** A request that fails its schema: a 400 naming the first issue's field (parseOr's refusal). */
export function requestRefusal(
  issues: readonly [z.core.$ZodIssue, ...z.core.$ZodIssue[]],
): RequestError {
  const { message, param } = describeIssue(issues[0]);
  return new RequestError(400, message, param);
}

/** One issue of a failed parse, as a message naming the field, and the field. */
function describeIssue(issue: z.core.$ZodIssue): { message: string; param: string | null } {
  const at = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const names = issue.keys.map((key) => (at ? `${at}.${key}` : key));
    return {
      message: `unknown parameter${names.length > 1 ? 's' : ''} ${names.map((name) => `"${name}"`).join(', ')}; check the spelling (teamtr serve refuses what it would otherwise ignore)`,
      param: names[0]!,
    };
  }
  const param = at || null;
  return { message: `${param ?? 'request'}: ${issue.message}`, param };
}

/** Samples one request may ask for (a group for RL: each is a full generation). */
export const maxChoices = 16;

function refuseUnsupported(
  body: z.output<typeof chatRequestSchema> | z.output<typeof completionRequestSchema>,
): void {
  const record = body as Record<string, unknown>;
  for (const field of unsupportedFields)
    if (record[field] !== undefined && record[field] !== null)
      throw new RequestError(
        400,
        `${field}: not supported by teamtr serve (plain text generation only); leave it out`,
        field,
      );
  const n = body.n ?? 1;
  if (n < 1 || n > maxChoices)
    throw new RequestError(400, `n: give 1 to ${maxChoices} samples, got ${n}`, 'n');
  if (n > 1 && body.stream)
    throw new RequestError(
      400,
      'n: several samples are served without streaming; drop stream or n',
      'n',
    );
  for (const key of ['frequency_penalty', 'presence_penalty'] as const) {
    const value = body[key];
    if (value !== undefined && value !== null && value !== 0)
      throw new RequestError(
        400,
        `${key}: penalties are not supported (send 0 or leave it out)`,
        key,
      );
  }
}

export function normalizeRequest(kind: 'chat' | 'completion', raw: unknown): NormalizedRequest {
  const schema = kind === 'chat' ? chatRequestSchema : completionRequestSchema;
  const body = parseOr(schema, raw, requestRefusal);
  refuseUnsupported(body);
  const stop =
    body.stop === undefined || body.stop === null
      ? []
      : typeof body.stop === 'string'
        ? [body.stop]
        : body.stop;
  const shared = {
    model: body.model,
    temperature: body.temperature ?? null,
    topP: body.top_p ?? null,
    topK: body.top_k === undefined || body.top_k === null || body.top_k < 0 ? null : body.top_k,
    stop,
    stream: body.stream ?? false,
    includeUsage: body.stream_options?.include_usage ?? false,
    seed: body.seed ?? null,
    n: body.n ?? 1,
  };
  if (kind === 'chat') {
    const chat = body as z.output<typeof chatRequestSchema>;
    const messages = chat.messages.map((message) => ({
      role: message.role,
      content:
        message.content === null
          ? ''
          : typeof message.content === 'string'
            ? message.content
            : message.content.map((part) => part.text).join(''),
    }));
    return {
      ...shared,
      kind,
      messages,
      prompt: '',
      maxTokens: chat.max_completion_tokens ?? chat.max_tokens ?? null,
      logprobs: chat.logprobs ?? false,
      topLogprobs: chat.logprobs ? (chat.top_logprobs ?? 0) : 0,
    };
  }
  const completion = body as z.output<typeof completionRequestSchema>;
  if (completion.echo) throw new RequestError(400, 'echo: not supported', 'echo');
  const prompt = typeof completion.prompt === 'string' ? completion.prompt : completion.prompt[0]!;
  return {
    ...shared,
    kind,
    messages: [],
    prompt,
    maxTokens: completion.max_tokens ?? 16,
    logprobs: completion.logprobs !== undefined && completion.logprobs !== null,
    topLogprobs: completion.logprobs ?? 0,
  };
}
