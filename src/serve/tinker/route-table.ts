import type { z } from 'zod';
import { HttpError } from '../../http/errors.js';
import { parseRequest } from '../../http/guards.js';
import type { FutureStore, Outcome } from './futures.js';
import { EngineUserError, type LocalTinkerEngine, type SamplerSource } from './local-engine.js';

/**
 * The shape of `teamtr serve --tinker`'s routes: each route is one row (method, path, how its
 * body is read, its handler), and the server (server.ts) mounts the rows with the shared
 * guards. Handlers get the server's state and the parsed request, and answer JSON or bytes.
 */

export interface TinkerState {
  engine: LocalTinkerEngine;
  futures: FutureStore;
  sessions: BoundedMap<string, { createdAt: number }>;
  samplers: BoundedMap<string, SamplerSource>;
  /** How long retrieve_future holds a request before answering try_again. */
  pollWaitMs: number;
  /** Telemetry batches accepted (the SDK sends its events; the server only counts them). */
  telemetryBatches: number;
}

export interface RouteCall {
  state: TinkerState;
  /** The route's path pattern, e.g. `/api/v1/create_model`: the name its refusals give it. */
  path: string;
  /** The parsed JSON body, or the raw bytes of a protobuf one; undefined without a body. */
  body: unknown;
  params: Record<string, string>;
  query: Record<string, string>;
  /** The Accept header. */
  accept: string;
}

export type Answer =
  { status?: number; json: unknown } | { status?: number; bytes: Uint8Array; contentType: string };

export interface TinkerRoute {
  method: 'GET' | 'POST' | 'DELETE';
  /** A hono path pattern, e.g. `/api/v1/samplers/:id`. */
  path: string;
  body: 'json' | 'protobuf' | 'none';
  /** A repeated X-Idempotency-Key gets the first answer again instead of running twice. */
  idempotent: boolean;
  handle(call: RouteCall): Answer | Promise<Answer>;
}

/**
 * A POST route (`body` JSON unless said otherwise) whose answer a repeated X-Idempotency-Key gets
 * again, as every training and sampling call's.
 */
export function postRoute(
  path: string,
  handle: TinkerRoute['handle'],
  body: TinkerRoute['body'] = 'json',
): TinkerRoute {
  return { method: 'POST', path, body, idempotent: true, handle };
}

/** The call's body checked against `schema`, refusals naming the route and the field. */
export function parseBody<Schema extends z.ZodType>(
  call: Pick<RouteCall, 'path' | 'body'>,
  schema: Schema,
): z.output<Schema> {
  return parseRequest(schema, call.body, call.path);
}

/** A request made within a session: its body checked, then its session_id known (else 404). */
export function sessionRequest<Schema extends z.ZodType<{ session_id: string }>>(
  call: RouteCall,
  schema: Schema,
): z.output<Schema> {
  const request = parseBody(call, schema);
  if (!call.state.sessions.has(request.session_id))
    throw new HttpError(
      404,
      `unknown session_id "${request.session_id}" (call create_session first)`,
    );
  return request;
}

/** Runs `work` in the queue; the answer is the future to retrieve its outcome with. */
export function future(
  state: TinkerState,
  work: () => Promise<Outcome> | Outcome,
  modelId?: string,
): Answer {
  const requestId = state.futures.enqueue(work);
  return { json: { request_id: requestId, ...(modelId ? { model_id: modelId } : {}) } };
}

/** An engine call answered at once (not queued): its user errors become `status`. */
export function now<Value>(status: number, work: () => Value): Value {
  try {
    return work();
  } catch (error) {
    if (error instanceof EngineUserError) throw new HttpError(status, error.message);
    throw error;
  }
}

/** A Map that forgets its oldest entries past `limit` (ids clients create without bound). */
export class BoundedMap<Key, Value> extends Map<Key, Value> {
  constructor(private readonly limit: number) {
    super();
  }

  override set(key: Key, value: Value): this {
    super.set(key, value);
    for (const oldest of this.keys()) {
      if (this.size <= this.limit) break;
      this.delete(oldest);
    }
    return this;
  }
}
