import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono } from 'hono';
import type { ServerResponse } from 'node:http';
import { HttpError, isClientGone } from '../http/errors.js';
import { hostGuard, readJson, type AppContext, type NodeEnvironment } from '../http/guards.js';
import { startHttpServer } from '../http/server.js';
import { TeamtrError } from '../util/errors.js';
import { chatCompletionsFormat, completionsFormat } from './chat-format.js';
import type { ServedModel } from './endpoints.js';
import { ConcurrencyLimiter } from './limiter.js';
import { RequestError, type NormalizedRequest } from './protocol.js';
import { responsesFormat } from './responses.js';
import { errorBody, type WireFormat } from './wire.js';

/**
 * An OpenAI-compatible HTTP server over served models: GET /v1/models, POST
 * /v1/chat/completions, /v1/completions and /v1/responses (streamed with server-sent events
 * when asked), GET /health. Bound to 127.0.0.1 unless told otherwise; request bodies are capped; at most
 * `maxConcurrent` completions run at once and `maxQueued` wait, beyond which requests get 429.
 * The routes are a table on hono; the guards (Host, content type, body size) are the ones
 * every teamtr server shares (src/http).
 */

export interface ServerOptions {
  endpoints: readonly ServedModel[];
  /** @default '127.0.0.1' */
  host?: string;
  /** 0 picks a free port. @default 8000 */
  port?: number;
  /** @default 1 MiB */
  maxBodyBytes?: number;
  /** Completions generated at once (CPU-bound: more only interleaves them). @default 1 */
  maxConcurrent?: number;
  /** Completions waiting for a slot before new ones are refused with 429. @default 8 */
  maxQueued?: number;
  /**
   * A client must send its headers within this time, and its whole request within
   * requestTimeoutMs, or the connection is closed (a body dribbled slowly cannot hold it).
   * @default 10_000 and 60_000
   */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /**
   * Let web pages from this origin call the server (CORS), e.g. "http://localhost:3000", or
   * "*" for any. Off by default: browsers then refuse cross-site reads.
   */
  corsOrigin?: string;
}

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

interface Served {
  limiter: ConcurrencyLimiter;
  byId: Map<string, ServedModel>;
  maxBodyBytes: number;
}

function modelNotFound(id: string, served: Served): RequestError {
  return new RequestError(
    404,
    `model "${id}" not found (available: ${[...served.byId.keys()].join(', ')})`,
    'model',
    'model_not_found',
  );
}

function modelCard(id: string) {
  return { id, object: 'model', created: 0, owned_by: 'teamtr' };
}

/** The wire formats a served model answers in, each on its own POST route. */
const wireFormats: readonly WireFormat[] = [
  chatCompletionsFormat,
  completionsFormat,
  responsesFormat,
];

async function completion(
  context: AppContext,
  served: Served,
  format: WireFormat,
): Promise<Response> {
  const normalized = format.parse(await readJson(context, served.maxBodyBytes));
  const endpoint = served.byId.get(normalized.model);
  if (!endpoint) throw modelNotFound(normalized.model, served);
  const release = await served.limiter.tryAcquire();
  if (!release)
    throw new RequestError(
      429,
      `the server is busy (${served.limiter.activeCount} running, ${served.limiter.queuedCount} queued); retry later`,
    );
  try {
    await complete(endpoint, normalized, format, context.env.outgoing as ServerResponse);
  } finally {
    release();
  }
  return RESPONSE_ALREADY_SENT;
}

/** The routes: method, path, handler. */
function routeTable(served: Served) {
  return [
    { method: 'GET', path: '/health', handle: (c: AppContext) => c.json({ status: 'ok' }) },
    {
      method: 'GET',
      path: '/v1/models',
      handle: (c: AppContext) =>
        c.json({ object: 'list', data: [...served.byId.keys()].map(modelCard) }),
    },
    {
      method: 'GET',
      path: '/v1/models/:id{.+}',
      handle: (c: AppContext) => {
        const id = c.req.param('id') ?? '';
        if (!served.byId.has(id)) throw modelNotFound(id, served);
        return c.json(modelCard(id));
      },
    },
    ...wireFormats.map((format) => ({
      method: 'POST',
      path: format.path,
      handle: (c: AppContext) => completion(c, served, format),
    })),
  ] as const;
}

/** Lets web pages from `origin` call the server; answers preflights before any other check. */
function cors(origin: string) {
  return async (context: AppContext, next: () => Promise<void>) => {
    context.header('access-control-allow-origin', origin);
    if (context.req.method === 'OPTIONS')
      return context.body(null, 204, {
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': 'content-type, authorization',
        'access-control-max-age': '600',
      });
    await next();
  };
}

function failure(error: Error, context: AppContext): Response {
  if (isClientGone(error)) return context.body(null, 499 as 200);
  if (error instanceof RequestError || error instanceof HttpError) {
    const type =
      error.status === 429
        ? 'rate_limit_error'
        : error.status === 404
          ? 'not_found_error'
          : 'invalid_request_error';
    const param = error instanceof RequestError ? error.param : (error.details.param ?? null);
    const code = error instanceof RequestError ? error.code : (error.details.code ?? null);
    if (error.status === 429) context.header('retry-after', '1');
    return context.json(errorBody(error.message, type, param, code), error.status as 400);
  }
  if (error instanceof TeamtrError)
    return context.json(errorBody(error.message, 'invalid_request_error'), 400);
  process.stderr.write(`teamtr serve: ${error.stack ?? String(error)}\n`);
  return context.json(errorBody('internal error (see the server log)', 'server_error'), 500);
}

function openAiApp(options: ServerOptions, allowedHosts: () => ReadonlySet<string> | null) {
  const served: Served = {
    limiter: new ConcurrencyLimiter(options.maxConcurrent ?? 1, options.maxQueued ?? 8),
    byId: new Map(options.endpoints.map((endpoint) => [endpoint.id, endpoint])),
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
  };
  const app = new Hono<NodeEnvironment>();
  if (options.corsOrigin) app.use(cors(options.corsOrigin));
  app.use(hostGuard(allowedHosts, 'use the URL the server printed'));
  const table = routeTable(served);
  for (const route of table) app.on(route.method, route.path, route.handle);
  app.notFound((context) => {
    throw new RequestError(
      404,
      `no route ${context.req.method} ${context.req.path} (routes: GET /v1/models, GET /v1/models/{id}, ${wireFormats.map((format) => `POST ${format.path}`).join(', ')}, GET /health)`,
    );
  });
  app.onError(failure);
  return app;
}

/** Runs one request on `endpoint` and writes its answer: whole, or streamed as it is generated. */
async function complete(
  endpoint: ServedModel,
  request: NormalizedRequest,
  format: WireFormat,
  response: ServerResponse,
): Promise<void> {
  const aborter = new AbortController();
  response.on('close', () => aborter.abort(new RequestError(499, 'the client went away')));
  const answer = format.answer(request);
  if (!request.stream) {
    const results = await endpoint.complete(request, {
      onDelta: () => undefined,
      signal: aborter.signal,
    });
    const text = JSON.stringify(answer.body(results));
    response.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    return void response.end(text);
  }
  // The stream opens at the first piece of text: an error before it (a prompt too long,
  // max_tokens past the context) is answered with its HTTP status, as without streaming.
  // Frames are made after the stream's opening ones: their sequence numbers follow.
  const send = (frames: () => readonly string[]) => {
    if (!response.headersSent) {
      response.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      for (const frame of answer.stream.start()) response.write(frame);
    }
    for (const frame of frames()) response.write(frame);
  };
  try {
    const [result] = await endpoint.complete(request, {
      onDelta: (text, logprobs) => send(() => answer.stream.delta(text, logprobs)),
      signal: aborter.signal,
    });
    send(() => answer.stream.end(result!));
  } catch (error) {
    if (!response.headersSent) throw error;
    // Headers are gone: report the failure in the stream itself.
    const known = error instanceof TeamtrError;
    send(() =>
      answer.stream.error(
        known ? error.message : 'internal error',
        known ? 'invalid_request_error' : 'server_error',
      ),
    );
    if (!known) process.stderr.write(`teamtr serve: ${(error as Error).stack ?? String(error)}\n`);
  }
  response.end();
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  if (options.endpoints.length === 0) throw new TeamtrError('nothing to serve: no models');
  const ids = options.endpoints.map((endpoint) => endpoint.id);
  const duplicate = ids.find((id, index) => ids.indexOf(id) !== index);
  if (duplicate) throw new TeamtrError(`two served models are both named "${duplicate}"`);
  let allowedHosts: ReadonlySet<string> | null = null;
  const running = await startHttpServer(
    openAiApp(options, () => allowedHosts),
    {
      host: options.host,
      port: options.port ?? 8000,
      headersTimeoutMs: options.headersTimeoutMs,
      requestTimeoutMs: options.requestTimeoutMs,
    },
  );
  allowedHosts = running.allowedHosts;
  return { url: running.url, port: running.port, close: running.close };
}
