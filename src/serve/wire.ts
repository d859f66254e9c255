import { randomBytes } from 'node:crypto';
import type { TokenLogprob } from './generation.js';
import type { NormalizedRequest } from './protocol.js';

/**
 * What every OpenAI wire format served here shares: the answer a served model gives, and the
 * shape of a format (its route, how a request is read, how an answer is written whole or as
 * server-sent events). Chat completions and legacy completions (chat-format.ts) and the
 * Responses API (responses.ts) implement it; the server never asks which one it holds.
 */

/** One answer of a served model. */
export interface ServedResult {
  text: string;
  /** 'length' when a limit cut the answer (max_tokens, or for a team any turn's limit). */
  finishReason: 'stop' | 'length';
  promptTokens: number;
  completionTokens: number;
  logprobs: TokenLogprob[] | null;
  /** Fields placed beside this answer, e.g. a team's turns under `teamtr`. */
  extra?: Record<string, unknown>;
}

/** The frames of one streamed answer, each a complete server-sent event. */
export interface StreamWriter {
  /** Before the first piece of text. */
  start(): string[];
  delta(text: string, logprobs: readonly TokenLogprob[]): string[];
  /** After the last piece: the finish reason, usage and the end of the stream. */
  end(result: ServedResult): string[];
  /** A failure once the stream is open (its HTTP status is already sent). */
  error(message: string, type: string): string[];
}

export interface WireFormat {
  /** POST route, e.g. "/v1/chat/completions". */
  readonly path: string;
  /** Validates a request body into the shape every served model reads (400 with the field). */
  parse(raw: unknown): NormalizedRequest;
  /** One answer to `request`: its whole body, or the frames of its stream. */
  answer(request: NormalizedRequest): {
    body(results: readonly ServedResult[]): unknown;
    stream: StreamWriter;
  };
}

/** Log-probs as both OpenAI formats list them: token text, log-prob, bytes, alternatives. */
export function logprobEntries(logprobs: readonly TokenLogprob[]) {
  return logprobs.map((entry) => ({
    token: entry.text,
    logprob: entry.logprob,
    bytes: entry.bytes,
    top_logprobs: entry.top.map((alternative) => ({
      token: alternative.text,
      logprob: alternative.logprob,
      bytes: alternative.bytes,
    })),
  }));
}

/** An id such as "chatcmpl-…" or "resp_…". */
export function wireId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}

/** A server-sent event: `data:` with the JSON body, after an `event:` line when named. */
export function sseFrame(body: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(body)}\n\n`;
}

export function errorBody(
  message: string,
  type: string,
  param: string | null = null,
  code: string | null = null,
): unknown {
  return { error: { message, type, param, code } };
}
