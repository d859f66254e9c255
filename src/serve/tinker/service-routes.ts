import { randomUUID } from 'node:crypto';
import { HttpError } from '../../http/errors.js';
import {
  clientConfigRequestSchema,
  createSessionRequestSchema,
  retrieveFutureRequestSchema,
  routes,
  sessionHeartbeatRequestSchema,
  telemetryRequestSchema,
} from '../../tinker/json-wire.js';
import { protobufContentType } from '../../tinker/wire-codec.js';
import {
  parseBody,
  sessionRequest,
  type Answer,
  type RouteCall,
  type TinkerRoute,
} from './route-table.js';

/**
 * The session routes: health, capabilities, the client configuration the SDK asks for while it
 * builds a client, telemetry, sessions and heartbeats, and retrieve_future.
 */

/**
 * The flags the SDK 0.25.0 reads from /api/v1/client/config, chosen for a local server: plain
 * API keys (no JWT exchange), httpx's own transport, uncompressed forward_backward bodies.
 */
const clientConfig = {
  pjwt_auth_enabled: false,
  credential_default_source: 'api_key',
  use_pyqwest_transport: false,
  proto_compress_fwdbwd: false,
  parallel_fwdbwd_chunks: true,
  create_model_via_load_weights: false,
  sample_no_retries: false,
};

async function retrieve(call: RouteCall): Promise<Answer> {
  const { state, accept } = call;
  const { request_id: requestId } = parseBody(call, retrieveFutureRequestSchema);
  const found = state.futures.lookup(requestId);
  if (found.state === 'unknown')
    throw new HttpError(404, `unknown request_id "${requestId}" (not issued by this server run)`);
  if (found.state === 'expired')
    throw new HttpError(
      410,
      `request_id "${requestId}" has expired: its result was kept for a while after it was retrieved (or for its time to live) and then dropped; send the request again`,
    );
  let timer: NodeJS.Timeout | undefined;
  const waited = await Promise.race([
    found.outcome,
    new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), state.pollWaitMs))),
  ]);
  clearTimeout(timer);
  if (waited === null)
    return { json: { type: 'try_again', request_id: requestId, queue_state: 'active' } };
  state.futures.retrievedOnce(requestId);
  if (waited.kind === 'failed') return { json: { error: waited.error, category: waited.category } };
  if (waited.kind === 'json') return { json: waited.body };
  if (!accept.includes(protobufContentType))
    throw new HttpError(
      406,
      `this result is sent as ${protobufContentType} only; send "Accept: ${protobufContentType}"`,
    );
  return { bytes: waited.bytes, contentType: protobufContentType };
}

export const serviceRoutes: TinkerRoute[] = [
  {
    method: 'GET',
    path: routes.health,
    body: 'none',
    idempotent: false,
    handle: () => ({ json: { status: 'ok' } }),
  },
  {
    method: 'GET',
    path: routes.capabilities,
    body: 'none',
    idempotent: false,
    handle: ({ state }) => ({
      json: { supported_models: [{ model_name: state.engine.baseModelName }] },
    }),
  },
  {
    method: 'POST',
    path: routes.clientConfig,
    body: 'json',
    idempotent: false,
    handle: (call) => {
      parseBody(call, clientConfigRequestSchema);
      return { json: clientConfig };
    },
  },
  {
    method: 'POST',
    path: routes.clientDynamicConfig,
    body: 'json',
    idempotent: false,
    handle: (call) => {
      parseBody(call, clientConfigRequestSchema);
      return { json: { refresh_interval_sec: 3600 } };
    },
  },
  {
    method: 'POST',
    path: routes.telemetry,
    body: 'json',
    idempotent: true,
    handle: (call) => {
      parseBody(call, telemetryRequestSchema);
      call.state.telemetryBatches++;
      return { json: { status: 'accepted' } };
    },
  },
  {
    method: 'POST',
    path: routes.createSession,
    body: 'json',
    idempotent: true,
    handle: (call) => {
      parseBody(call, createSessionRequestSchema);
      const sessionId = `session-${randomUUID()}`;
      call.state.sessions.set(sessionId, { createdAt: Date.now() });
      return { json: { type: 'create_session', session_id: sessionId } };
    },
  },
  {
    method: 'POST',
    path: routes.sessionHeartbeat,
    body: 'json',
    idempotent: false,
    handle: (call) => {
      sessionRequest(call, sessionHeartbeatRequestSchema);
      return { json: { type: 'session_heartbeat' } };
    },
  },
  {
    method: 'POST',
    path: routes.retrieveFuture,
    body: 'json',
    idempotent: false,
    handle: retrieve,
  },
];
