import { randomUUID } from 'node:crypto';
import { TinkerStatusError, TinkerUnavailableError } from './errors.js';

/**
 * One POST/GET to a Tinker route with a timeout per attempt and bounded retries, as the SDK's
 * transport does: 408, 429, 5xx, timeouts and lost connections are tried again after an
 * exponential backoff (initial × 2^k, capped at 10 s, or the server's Retry-After); other 4xx
 * fail at once. Every attempt of one request carries the same X-Idempotency-Key, so a service
 * that saw a lost attempt does not run it twice.
 */

export interface TransportSettings {
  baseURL: string;
  apiKey: string;
  /** Per attempt. */
  timeoutMs: number;
  /** Further attempts after a transient failure. */
  maxRetries: number;
  /** First backoff; doubles per attempt up to 10 s. */
  retryDelayMs: number;
}

export interface HttpAnswer {
  status: number;
  contentType: string;
  bytes: Uint8Array;
}

export interface SendOptions {
  json?: unknown;
  protobuf?: Uint8Array;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Hand a 408 back to the caller (retrieve_future reads it as "still running"). */
  passThrough408?: boolean;
}

const maximumBackoffMs = 10_000;
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** The service's message from a JSON error body ({detail}, {error}, {message}), or the body's start. */
export function serverMessage(bytes: Uint8Array): string {
  const text = Buffer.from(bytes).toString('utf8');
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    for (const key of ['detail', 'error', 'message'])
      if (typeof body[key] === 'string') return body[key] as string;
    if (body.error && typeof (body.error as { message?: unknown }).message === 'string')
      return (body.error as { message: string }).message;
  } catch {
    // not JSON: fall through
  }
  return text.slice(0, 200) || '(empty body)';
}

function retryAfterMs(response: Response): number | null {
  const seconds = Number(response.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 60) * 1000 : null;
}

type Attempt = { answer: HttpAnswer } | { retry: { reason: string; afterMs: number | null } };

async function attempt(
  route: string,
  options: SendOptions,
  settings: TransportSettings,
  idempotencyKey: string,
): Promise<Attempt> {
  const headers: Record<string, string> = {
    'x-api-key': settings.apiKey,
    'x-idempotency-key': idempotencyKey,
    ...options.headers,
  };
  let body: Uint8Array | string | undefined;
  if (options.protobuf) {
    headers['content-type'] = 'application/x-protobuf';
    body = options.protobuf;
  } else if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  let response: Response;
  let bytes: Uint8Array;
  try {
    response = await fetch(`${settings.baseURL}${route}`, {
      method: options.method ?? 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    bytes = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError')
      return {
        retry: { reason: `no answer within ${settings.timeoutMs / 1000} s`, afterMs: null },
      };
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const reason =
      cause?.code === 'ECONNREFUSED'
        ? `connection refused at ${settings.baseURL} (is the service running?)`
        : `connection failed: ${cause?.message ?? (error as Error).message}`;
    return { retry: { reason, afterMs: null } };
  }
  const status = response.status;
  const answer = { status, contentType: response.headers.get('content-type') ?? '', bytes };
  if (status === 408 && options.passThrough408) return { answer };
  if (status === 408 || status === 429 || status >= 500)
    return {
      retry: { reason: `HTTP ${status}: ${serverMessage(bytes)}`, afterMs: retryAfterMs(response) },
    };
  if (status >= 400 && status !== 410) {
    const hint =
      status === 401 || status === 403
        ? 'check the API key in the environment variable the client reads (TINKER_API_KEY by default)'
        : status === 404
          ? 'the service does not know this route or id: check baseURL (the part before /api/v1) and the ids used'
          : '';
    throw new TinkerStatusError(route, status, serverMessage(bytes), hint);
  }
  return { answer };
}

/** Sends one request, retrying transient failures; returns the first non-transient answer. */
export async function send(
  route: string,
  options: SendOptions,
  settings: TransportSettings,
): Promise<HttpAnswer> {
  const idempotencyKey = randomUUID();
  let lastReason = '';
  for (let index = 0; index <= settings.maxRetries; index++) {
    const result = await attempt(route, options, settings, idempotencyKey);
    if ('answer' in result) return result.answer;
    lastReason = result.retry.reason;
    if (index < settings.maxRetries)
      await sleep(
        result.retry.afterMs ?? Math.min(settings.retryDelayMs * 2 ** index, maximumBackoffMs),
      );
  }
  throw new TinkerUnavailableError(route, lastReason, settings.maxRetries + 1);
}
