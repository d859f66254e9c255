import { TeamtrError } from '../util/errors.js';

/**
 * A small JSON-over-HTTP client for OpenAI-compatible servers: a timeout per attempt, retries
 * with exponential backoff for what may pass (timeouts, lost connections, 429, 5xx), and an
 * immediate error naming the server and its message for what will not (other 4xx).
 */

/** A remote model endpoint failed, refused or answered something unusable. */
export class RemoteAgentError extends TeamtrError {
  constructor(
    readonly url: string,
    detail: string,
    readonly status: number | null = null,
  ) {
    super(`${url}: ${detail}`);
  }
}

export interface HttpSettings {
  apiKey: string | null;
  /** Named in 401/403 errors. */
  apiKeyEnv: string | null;
  timeoutMs: number;
  retries: number;
  retryDelayMs: number;
}

export interface JsonResponse {
  status: number;
  text: string;
  json: unknown;
}

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** The server's message from an OpenAI-style error body, or the start of the body. */
function serverMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof body.error === 'string') return body.error;
    if (typeof body.error?.message === 'string') return body.error.message;
    if (typeof body.message === 'string') return body.message;
  } catch {
    // not JSON: fall through
  }
  return text.slice(0, 200) || '(empty body)';
}

interface Attempt {
  response?: JsonResponse;
  /** Worth another attempt, and how long to wait first (ms) if the server said. */
  retry?: { reason: string; afterMs: number | null };
}

async function attempt(url: string, body: unknown, settings: HttpSettings): Promise<Attempt> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    text = await response.text();
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError')
      return {
        retry: { reason: `no response within ${settings.timeoutMs / 1000} s`, afterMs: null },
      };
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const detail =
      cause?.code === 'ECONNREFUSED'
        ? 'connection refused (is the server running?)'
        : (cause?.message ?? (error as Error).message);
    return { retry: { reason: detail, afterMs: null } };
  }
  if (response.status === 429 || response.status >= 500) {
    const after = Number(response.headers.get('retry-after'));
    return {
      retry: {
        reason: `HTTP ${response.status}: ${serverMessage(text)}`,
        afterMs: Number.isFinite(after) && after > 0 ? Math.min(after, 60) * 1000 : null,
      },
    };
  }
  if (response.status >= 400) {
    const hint =
      response.status === 401 || response.status === 403
        ? settings.apiKeyEnv
          ? ` (check the API key in $${settings.apiKeyEnv})`
          : ' (the server wants an API key: set apiKeyEnv)'
        : '';
    throw new RemoteAgentError(
      url,
      `refused the request with HTTP ${response.status}: ${serverMessage(text)}${hint}`,
      response.status,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RemoteAgentError(
      url,
      `malformed response: not JSON (HTTP ${response.status}, body starts ${JSON.stringify(text.slice(0, 200))})`,
      response.status,
    );
  }
  return { response: { status: response.status, text, json } };
}

/** POSTs `body` as JSON and returns the parsed JSON answer, retrying transient failures. */
export async function postJson(
  url: string,
  body: unknown,
  settings: HttpSettings,
): Promise<JsonResponse> {
  let lastReason = '';
  for (let attemptIndex = 0; attemptIndex <= settings.retries; attemptIndex++) {
    const result = await attempt(url, body, settings);
    if (result.response) return result.response;
    lastReason = result.retry!.reason;
    if (attemptIndex < settings.retries)
      await sleep(result.retry!.afterMs ?? settings.retryDelayMs * 2 ** attemptIndex);
  }
  const attempts = settings.retries + 1;
  throw new RemoteAgentError(
    url,
    `${lastReason} (after ${attempts} attempt${attempts > 1 ? 's' : ''})`,
  );
}
