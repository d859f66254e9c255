import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isLoopbackHost, listenOrExplain, loopbackHosts } from '../util/listen.js';
import type { AddressInfo } from 'node:net';
import { TeamtrError } from '../util/errors.js';
import type { ServedModel } from './endpoints.js';
import { ConcurrencyLimiter } from './limiter.js';
import {
  chunkBody,
  completionId,
  errorBody,
  normalizeRequest,
  RequestError,
  responseBody,
  usageChunkBody,
  type NormalizedRequest,
} from './protocol.js';
import { readRequestBody } from '../util/request-body.js';

/**
 * An OpenAI-compatible HTTP server over served models: GET /v1/models, POST
 * /v1/chat/completions and /v1/completions (streamed with server-sent events when asked), GET
 * /health. Bound to 127.0.0.1 unless told otherwise; request bodies are capped; at most
 * `maxConcurrent` completions run at once and `maxQueued` wait, beyond which requests get 429.
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

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

class Router {
  private readonly limiter: ConcurrencyLimiter;
  private readonly byId: Map<string, ServedModel>;

  constructor(private readonly options: ServerOptions) {
    this.limiter = new ConcurrencyLimiter(options.maxConcurrent ?? 1, options.maxQueued ?? 8);
    this.byId = new Map(options.endpoints.map((endpoint) => [endpoint.id, endpoint]));
  }

  /**
   * Host headers this server answers when bound to loopback: a web page that rebinds its own
   * domain name to 127.0.0.1 sends its domain, and is refused (421).
   */
  allowedHosts: Set<string> | null = null;

  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const route = `${request.method} ${(request.url ?? '').split('?')[0]}`;
    if (this.options.corsOrigin) {
      response.setHeader('access-control-allow-origin', this.options.corsOrigin);
      if (request.method === 'OPTIONS') {
        response.writeHead(204, {
          'access-control-allow-methods': 'GET, POST, OPTIONS',
          'access-control-allow-headers': 'content-type, authorization',
          'access-control-max-age': '600',
        });
        return void response.end();
      }
    }
    if (this.allowedHosts && !this.allowedHosts.has(request.headers.host ?? ''))
      throw new RequestError(
        421,
        `this server answers requests for ${[...this.allowedHosts][0]} only (Host ${JSON.stringify(request.headers.host ?? '')} was refused to block DNS rebinding)`,
      );
    if (route === 'GET /health') return sendJson(response, 200, { status: 'ok' });
    if (request.method === 'GET' && route.startsWith('GET /v1/models/')) {
      const id = decodeURIComponent(route.slice('GET /v1/models/'.length));
      if (!this.byId.has(id))
        throw new RequestError(
          404,
          `model "${id}" not found (available: ${[...this.byId.keys()].join(', ')})`,
          'model',
          'model_not_found',
        );
      return sendJson(response, 200, { id, object: 'model', created: 0, owned_by: 'teamtr' });
    }
    if (route === 'GET /v1/models') {
      return sendJson(response, 200, {
        object: 'list',
        data: [...this.byId.keys()].map((id) => ({
          id,
          object: 'model',
          created: 0,
          owned_by: 'teamtr',
        })),
      });
    }
    const kind =
      route === 'POST /v1/chat/completions'
        ? 'chat'
        : route === 'POST /v1/completions'
          ? 'completion'
          : null;
    if (!kind)
      throw new RequestError(
        404,
        `no route ${route} (routes: GET /v1/models, GET /v1/models/{id}, POST /v1/chat/completions, POST /v1/completions, GET /health)`,
      );
    // A cross-site form can post text/plain without a preflight; JSON needs one, so only JSON.
    const contentType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json')
      throw new RequestError(
        415,
        `send the body as JSON with "content-type: application/json" (got ${JSON.stringify(contentType || 'none')})`,
      );
    const text = (
      await readRequestBody(
        request,
        this.options.maxBodyBytes ?? 1024 * 1024,
        (detail) => new RequestError(413, detail),
      )
    ).toString('utf8');
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new RequestError(400, `the body is not valid JSON (${(error as Error).message})`);
    }
    const normalized = normalizeRequest(kind, raw);
    const endpoint = this.byId.get(normalized.model);
    if (!endpoint)
      throw new RequestError(
        404,
        `model "${normalized.model}" not found (available: ${[...this.byId.keys()].join(', ')})`,
        'model',
        'model_not_found',
      );
    const release = await this.limiter.tryAcquire();
    if (!release)
      throw new RequestError(
        429,
        `the server is busy (${this.limiter.activeCount} running, ${this.limiter.queuedCount} queued); retry later`,
      );
    try {
      await this.complete(endpoint, normalized, response);
    } finally {
      release();
    }
  }

  private async complete(
    endpoint: ServedModel,
    request: NormalizedRequest,
    response: ServerResponse,
  ): Promise<void> {
    const aborter = new AbortController();
    response.on('close', () => aborter.abort());
    const id = completionId(request.kind);
    const created = Math.floor(Date.now() / 1000);
    if (!request.stream) {
      const results = [];
      for (let index = 0; index < request.n; index++)
        results.push(
          await endpoint.complete(
            { ...request, seed: request.seed === null ? null : request.seed + index },
            { onDelta: () => undefined, signal: aborter.signal },
          ),
        );
      return sendJson(response, 200, responseBody(request, id, created, results));
    }
    // The stream opens at the first token: an error before it (a prompt too long, max_tokens
    // past the context) is answered with its HTTP status, as without streaming.
    const open = () => {
      if (response.headersSent) return;
      response.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
      });
      if (request.kind === 'chat')
        response.write(
          `data: ${JSON.stringify(chunkBody(request, id, created, { role: true, text: '' }))}\n\n`,
        );
    };
    const send = (body: unknown) => {
      open();
      response.write(`data: ${JSON.stringify(body)}\n\n`);
    };
    try {
      const result = await endpoint.complete(request, {
        onDelta: (text, logprobs) => send(chunkBody(request, id, created, { text, logprobs })),
        signal: aborter.signal,
      });
      send(chunkBody(request, id, created, { finishReason: result.finishReason }));
      if (request.includeUsage) send(usageChunkBody(request, id, created, result));
    } catch (error) {
      if (!response.headersSent) throw error;
      // Headers are gone: report the failure in the stream itself.
      const message = error instanceof TeamtrError ? error.message : 'internal error';
      send(
        errorBody(message, error instanceof TeamtrError ? 'invalid_request_error' : 'server_error'),
      );
      if (!(error instanceof TeamtrError))
        process.stderr.write(`teamtr serve: ${(error as Error).stack ?? String(error)}\n`);
    }
    response.end('data: [DONE]\n\n');
  }
}

function reportFailure(response: ServerResponse, error: unknown): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  if (error instanceof RequestError) {
    const type =
      error.status === 429
        ? 'rate_limit_error'
        : error.status === 404
          ? 'not_found_error'
          : 'invalid_request_error';
    sendJson(
      response,
      error.status,
      errorBody(error.message, type, error.param, error.code),
      error.status === 429 ? { 'retry-after': '1' } : {},
    );
  } else if (error instanceof TeamtrError) {
    sendJson(response, 400, errorBody(error.message, 'invalid_request_error'));
  } else {
    process.stderr.write(`teamtr serve: ${(error as Error)?.stack ?? String(error)}\n`);
    sendJson(response, 500, errorBody('internal error (see the server log)', 'server_error'));
  }
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  if (options.endpoints.length === 0) throw new TeamtrError('nothing to serve: no models');
  const ids = options.endpoints.map((endpoint) => endpoint.id);
  const duplicate = ids.find((id, index) => ids.indexOf(id) !== index);
  if (duplicate) throw new TeamtrError(`two served models are both named "${duplicate}"`);
  const router = new Router(options);
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const server: Server = createServer(
    // Node checks the timeouts every connectionsCheckingInterval (30 s by default).
    { connectionsCheckingInterval: Math.min(1_000, headersTimeout) },
    (request, response) => {
      router.handle(request, response).catch((error: unknown) => reportFailure(response, error));
    },
  );
  server.headersTimeout = headersTimeout;
  server.requestTimeout = options.requestTimeoutMs ?? 60_000;
  const host = options.host ?? '127.0.0.1';
  await listenOrExplain(server, host, options.port ?? 8000);
  const { port } = server.address() as AddressInfo;
  if (isLoopbackHost(host)) router.allowedHosts = loopbackHosts(port, host);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
