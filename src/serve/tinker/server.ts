import { Hono } from 'hono';
import { HttpError, isClientGone } from '../../http/errors.js';
import {
  hostGuard,
  readBody,
  readJson,
  requireMediaType,
  type AppContext,
  type NodeEnvironment,
} from '../../http/guards.js';
import { requestLog, startHttpServer } from '../../http/server.js';
import { protobufContentType } from '../../tinker/wire-codec.js';
import { FutureStore, IdempotencyCache, type FutureStoreOptions } from './futures.js';
import type { LocalTinkerEngine } from './local-engine.js';
import { restRoutes } from './rest-routes.js';
import { BoundedMap, type Answer, type TinkerRoute, type TinkerState } from './route-table.js';
import { samplingRoutes } from './sampling-routes.js';
import { serviceRoutes } from './service-routes.js';
import { trainingRoutes } from './training-routes.js';

/**
 * `teamtr serve --tinker`: the Tinker API that the official SDK and teamtr's client use,
 * answered by the local CPU engine. Long operations return a future ({request_id, model_id})
 * at once and run one at a time in arrival order; `retrieve_future` waits up to `pollWaitMs`
 * for the result and otherwise answers `try_again`, as the service does. A request repeated
 * with the same X-Idempotency-Key gets the first answer again (it is not run twice). The
 * routes are tables (service-, training-, sampling-, rest-routes.ts); the guards are the ones
 * every teamtr server shares (src/http).
 */

export interface TinkerServiceOptions {
  engine: LocalTinkerEngine;
  /** @default '127.0.0.1' */
  host?: string;
  /** 0 picks a free port. @default 8000 */
  port?: number;
  /** @default 64 MiB */
  maxBodyBytes?: number;
  /** How long retrieve_future holds a request before answering try_again. @default 5_000 */
  pollWaitMs?: number;
  /** How long futures and idempotent answers are remembered (see futures.ts). */
  futures?: FutureStoreOptions;
  /** Where the request log goes, one line per request. @default none */
  log?: (line: string) => void;
  /** @default 10_000 and 120_000 (a 64 MiB body on a slow link) */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
}

export interface RunningTinkerService {
  url: string;
  port: number;
  /** What the server remembers, for tests of its bounds. */
  state: TinkerState;
  idempotency: IdempotencyCache<Answer>;
  close(): Promise<void>;
}

export const tinkerRoutes: readonly TinkerRoute[] = [
  ...serviceRoutes,
  ...trainingRoutes,
  ...samplingRoutes,
  ...restRoutes,
];

function respond(context: AppContext, answer: Answer): Response {
  if ('bytes' in answer)
    return context.body(answer.bytes as Uint8Array<ArrayBuffer>, (answer.status ?? 200) as 200, {
      'content-type': answer.contentType,
    });
  return context.json(answer.json, (answer.status ?? 200) as 200);
}

async function readRequest(context: AppContext, route: TinkerRoute, maxBodyBytes: number) {
  if (route.body === 'json') return readJson(context, maxBodyBytes);
  if (route.body === 'protobuf') {
    requireMediaType(context, [protobufContentType]);
    return new Uint8Array(await readBody(context, maxBodyBytes));
  }
  return undefined;
}

function mount(
  app: Hono<NodeEnvironment>,
  route: TinkerRoute,
  state: TinkerState,
  settings: { maxBodyBytes: number; idempotency: IdempotencyCache<Answer> },
): void {
  app.on(route.method, route.path, async (context) => {
    const key = context.req.header('x-idempotency-key');
    const cacheKey = route.idempotent && key ? `${route.path} ${key}` : null;
    const remembered = cacheKey ? settings.idempotency.get(cacheKey) : undefined;
    if (remembered) return respond(context, remembered);
    const answer = await route.handle({
      state,
      path: route.path,
      body: await readRequest(context, route, settings.maxBodyBytes),
      params: context.req.param() as Record<string, string>,
      query: context.req.query(),
      accept: context.req.header('accept') ?? '',
    });
    if (cacheKey) settings.idempotency.set(cacheKey, answer);
    return respond(context, answer);
  });
}

function tinkerApp(
  state: TinkerState,
  settings: {
    maxBodyBytes: number;
    idempotency: IdempotencyCache<Answer>;
    allowedHosts: () => ReadonlySet<string> | null;
    log?: (line: string) => void;
  },
): Hono<NodeEnvironment> {
  const app = new Hono<NodeEnvironment>();
  if (settings.log) app.use(requestLog(settings.log));
  app.use(hostGuard(settings.allowedHosts, 'point the client at the URL the server printed'));
  for (const route of tinkerRoutes) mount(app, route, state, settings);
  const known = tinkerRoutes.map((route) => `${route.method} ${route.path}`).join(', ');
  app.notFound((context) => {
    const message = `no route ${context.req.method} ${context.req.path}; \`teamtr serve --tinker\` implements: ${known}`;
    context.set('errorText', message);
    return context.json({ detail: message }, 404);
  });
  app.onError((error, context) => {
    if (isClientGone(error)) {
      context.set('errorText', 'the client went away');
      return context.body(null, 499 as 200);
    }
    const status = error instanceof HttpError ? error.status : 500;
    const message =
      error instanceof HttpError ? error.message : `internal error: ${(error as Error).message}`;
    context.set('errorText', message);
    if (!(error instanceof HttpError))
      process.stderr.write(`teamtr serve --tinker: ${(error as Error).stack ?? String(error)}\n`);
    return context.json({ detail: message }, status as 400);
  });
  return app;
}

export async function startTinkerService(
  options: TinkerServiceOptions,
): Promise<RunningTinkerService> {
  const state: TinkerState = {
    engine: options.engine,
    futures: new FutureStore({
      ...options.futures,
      onFailure: (requestId, error, category) =>
        options.log?.(`request ${requestId} failed (${category} error): ${error}`),
    }),
    sessions: new BoundedMap(10_000),
    samplers: new BoundedMap(10_000),
    pollWaitMs: options.pollWaitMs ?? 5_000,
    telemetryBatches: 0,
  };
  const idempotency = new IdempotencyCache<Answer>(options.futures);
  let allowedHosts: ReadonlySet<string> | null = null;
  const app = tinkerApp(state, {
    maxBodyBytes: options.maxBodyBytes ?? 64 * 1024 * 1024,
    idempotency,
    allowedHosts: () => allowedHosts,
    log: options.log,
  });
  const running = await startHttpServer(app, {
    host: options.host,
    port: options.port ?? 8000,
    headersTimeoutMs: options.headersTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs ?? 120_000,
  });
  allowedHosts = running.allowedHosts;
  return { url: running.url, port: running.port, state, idempotency, close: running.close };
}
