import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { z } from 'zod';
import { listenOrExplain } from '../util/listen.js';
import {
  createModelRequestSchema,
  createSamplingSessionRequestSchema,
  createSessionRequestSchema,
  loadWeightsRequestSchema,
  modelRequestSchema,
  optimStepRequestSchema,
  retrieveFutureRequestSchema,
  routes,
  sampleRequestSchema,
  saveWeightsRequestSchema,
  sessionHeartbeatRequestSchema,
} from './json-wire.js';
import { EngineUserError, type LocalTinkerEngine } from './local-engine.js';
import {
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  protobufContentType,
  WireFormatError,
} from './wire-codec.js';
import { readRequestBody } from '../util/request-body.js';

/**
 * `teamtr serve --tinker`: the routes of the Tinker API that teamtr's client uses, answered by
 * the local CPU engine. Long operations return a future ({request_id, model_id}) at once and run
 * one at a time in arrival order; `retrieve_future` waits up to `pollWaitMs` for the result and
 * otherwise answers `try_again`, as the service does. Requests with an X-Idempotency-Key that
 * was already seen get the first answer again (a retried request is not run twice).
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
}

export interface RunningTinkerService {
  url: string;
  port: number;
  close(): Promise<void>;
}

type Outcome =
  | { kind: 'json'; body: unknown }
  | { kind: 'protobuf'; bytes: Uint8Array }
  | { kind: 'failed'; error: string; category: 'user' | 'server' };

interface Answer {
  status: number;
  body: unknown;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function parseBody<Schema extends z.ZodType>(
  route: string,
  body: unknown,
  schema: Schema,
): z.output<Schema> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new HttpError(400, `${route}: ${issue.path.join('.') || 'body'}: ${issue.message}`);
}

export async function startTinkerService(
  options: TinkerServiceOptions,
): Promise<RunningTinkerService> {
  const { engine } = options;
  const pollWaitMs = options.pollWaitMs ?? 5_000;
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024 * 1024;
  const futures = new Map<string, Promise<Outcome>>();
  const sessions = new Set<string>();
  const samplers = new Map<string, { modelPath?: string | null; baseModel?: string | null }>();
  const idempotent = new Map<string, Answer>();
  let queue: Promise<unknown> = Promise.resolve();

  /** Queues `work` behind every earlier operation and answers with its future. */
  const enqueue = (work: () => Promise<Outcome> | Outcome, modelId?: string): Answer => {
    const requestId = randomUUID();
    const outcome = queue
      .then(work)
      .catch((error: unknown): Outcome =>
        error instanceof EngineUserError
          ? { kind: 'failed', error: error.message, category: 'user' }
          : { kind: 'failed', error: (error as Error).message, category: 'server' },
      );
    queue = outcome;
    futures.set(requestId, outcome);
    return {
      status: 200,
      body: { request_id: requestId, ...(modelId ? { model_id: modelId } : {}) },
    };
  };

  const checkSession = (sessionId: string) => {
    if (!sessions.has(sessionId))
      throw new HttpError(404, `unknown session_id "${sessionId}" (call create_session first)`);
  };

  const jsonRoutes: Record<string, (body: unknown) => Answer> = {
    [routes.createSession]: (body) => {
      parseBody(routes.createSession, body, createSessionRequestSchema);
      const sessionId = `session-${randomUUID()}`;
      sessions.add(sessionId);
      return { status: 200, body: { type: 'create_session', session_id: sessionId } };
    },
    [routes.sessionHeartbeat]: (body) => {
      checkSession(
        parseBody(routes.sessionHeartbeat, body, sessionHeartbeatRequestSchema).session_id,
      );
      return { status: 200, body: { type: 'session_heartbeat' } };
    },
    [routes.createModel]: (body) => {
      const request = parseBody(routes.createModel, body, createModelRequestSchema);
      checkSession(request.session_id);
      if (!request.lora_config)
        throw new HttpError(
          400,
          `${routes.createModel}: lora_config is required (the local engine trains LoRA adapters only)`,
        );
      const lora = request.lora_config;
      return enqueue(async () => ({
        kind: 'json',
        body: {
          model_id: await engine.createModel(request.base_model, {
            rank: lora.rank,
            seed: lora.seed ?? undefined,
            trainAttention: lora.train_attn,
            trainMlp: lora.train_mlp,
            trainUnembed: lora.train_unembed,
          }),
          type: 'create_model',
        },
      }));
    },
    [routes.getInfo]: (body) => {
      const { model_id: modelId } = parseBody(routes.getInfo, body, modelRequestSchema);
      let info;
      try {
        info = engine.info(modelId);
      } catch (error) {
        throw new HttpError(404, (error as Error).message);
      }
      return {
        status: 200,
        body: {
          type: 'get_info',
          model_id: modelId,
          model_data: { model_name: info.modelName },
          is_lora: true,
          lora_rank: info.loraRank,
          model_name: info.modelName,
        },
      };
    },
    [routes.optimStep]: (body) => {
      const request = parseBody(routes.optimStep, body, optimStepRequestSchema);
      const adam = request.adam_params;
      return enqueue(
        () => ({
          kind: 'json',
          body: {
            metrics: engine.optimStep(request.model_id, {
              learningRate: adam.learning_rate,
              beta1: adam.beta1,
              beta2: adam.beta2,
              epsilon: adam.eps,
              weightDecay: adam.weight_decay,
              gradientClipNorm: adam.grad_clip_norm,
            }),
          },
        }),
        request.model_id,
      );
    },
    [routes.saveWeights]: (body) => {
      const request = parseBody(routes.saveWeights, body, saveWeightsRequestSchema);
      const name = request.path ?? `step-${randomUUID()}`;
      return enqueue(
        () => ({
          kind: 'json',
          body: {
            path: engine.saveWeights(request.model_id, name, 'weights'),
            type: 'save_weights',
          },
        }),
        request.model_id,
      );
    },
    [routes.saveWeightsForSampler]: (body) => {
      const request = parseBody(routes.saveWeightsForSampler, body, saveWeightsRequestSchema);
      const name = request.path ?? `sampler-${randomUUID()}`;
      return enqueue(
        () => ({
          kind: 'json',
          body: {
            path: engine.saveWeights(request.model_id, name, 'sampler_weights'),
            type: 'save_weights_for_sampler',
          },
        }),
        request.model_id,
      );
    },
    [routes.loadWeights]: (body) => {
      const request = parseBody(routes.loadWeights, body, loadWeightsRequestSchema);
      return enqueue(() => {
        engine.loadWeights(request.model_id, request.path, request.optimizer);
        return {
          kind: 'json',
          body: { path: request.path, model_id: request.model_id, type: 'load_weights' },
        };
      }, request.model_id);
    },
    [routes.createSamplingSession]: (body) => {
      const request = parseBody(
        routes.createSamplingSession,
        body,
        createSamplingSessionRequestSchema,
      );
      checkSession(request.session_id);
      const source = { modelPath: request.model_path, baseModel: request.base_model };
      try {
        engine.checkSamplerSource(source);
      } catch (error) {
        throw new HttpError(400, `${routes.createSamplingSession}: ${(error as Error).message}`);
      }
      const samplingSessionId = `sampler-${randomUUID()}`;
      samplers.set(samplingSessionId, source);
      return {
        status: 200,
        body: { type: 'create_sampling_session', sampling_session_id: samplingSessionId },
      };
    },
    [routes.sample]: (body) => {
      const request = parseBody(routes.sample, body, sampleRequestSchema);
      const source = request.sampling_session_id
        ? samplers.get(request.sampling_session_id)
        : { modelPath: request.model_path, baseModel: request.base_model };
      if (!source)
        throw new HttpError(404, `unknown sampling_session_id "${request.sampling_session_id}"`);
      const parameters = request.sampling_params;
      if (
        typeof parameters.stop === 'string' ||
        (parameters.stop?.length && typeof parameters.stop[0] === 'string')
      )
        throw new HttpError(
          400,
          `${routes.sample}: sampling_params.stop: the local engine takes stop token ids, not strings`,
        );
      return enqueue(async () => ({
        kind: 'protobuf',
        bytes: encodeSampleResponse(
          await engine.sample(
            source,
            request.prompt.chunks.flatMap((chunk) => chunk.tokens),
            {
              maxTokens: parameters.max_tokens ?? 16,
              seed: parameters.seed ?? undefined,
              temperature: parameters.temperature,
              topK: parameters.top_k,
              topP: parameters.top_p,
              stopTokens: (parameters.stop as number[] | null | undefined) ?? undefined,
            },
            request.num_samples,
          ),
        ),
      }));
    },
  };

  const forwardBackward = (bytes: Uint8Array): Answer => {
    let request;
    try {
      request = decodeForwardBackwardRequest(bytes);
    } catch (error) {
      if (error instanceof WireFormatError)
        throw new HttpError(400, `${routes.forwardBackward}: ${error.message}`);
      throw error;
    }
    return enqueue(
      () => ({
        kind: 'protobuf',
        bytes: encodeForwardBackwardOutput(
          engine.forwardBackward(
            request.modelId,
            request.data,
            request.lossFunction,
            request.forwardOnly,
          ),
        ),
      }),
      request.modelId,
    );
  };

  const retrieve = async (
    body: unknown,
    response: ServerResponse,
    accept: string,
  ): Promise<void> => {
    const { request_id: requestId } = parseBody(
      routes.retrieveFuture,
      body,
      retrieveFutureRequestSchema,
    );
    const future = futures.get(requestId);
    if (!future) throw new HttpError(404, `unknown request_id "${requestId}"`);
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      future,
      new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), pollWaitMs))),
    ]);
    clearTimeout(timer);
    if (waited === null)
      return sendJson(response, 200, {
        type: 'try_again',
        request_id: requestId,
        queue_state: 'active',
      });
    if (waited.kind === 'failed')
      return sendJson(response, 200, { error: waited.error, category: waited.category });
    if (waited.kind === 'json') return sendJson(response, 200, waited.body);
    if (!accept.includes(protobufContentType))
      throw new HttpError(
        406,
        `this result is sent as ${protobufContentType} only; send "Accept: ${protobufContentType}"`,
      );
    response.writeHead(200, {
      'content-type': protobufContentType,
      'content-length': waited.bytes.byteLength,
    });
    response.end(waited.bytes);
  };

  const known = [
    `GET ${routes.health}`,
    `GET ${routes.capabilities}`,
    `POST ${routes.forwardBackward}`,
    `POST ${routes.retrieveFuture}`,
    ...Object.keys(jsonRoutes).map((route) => `POST ${route}`),
  ];

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const route = (request.url ?? '/').split('?')[0]!;
    const method = request.method ?? 'GET';
    if (method === 'GET' && route === routes.health)
      return sendJson(response, 200, { status: 'ok' });
    if (method === 'GET' && route === routes.capabilities)
      return sendJson(response, 200, { supported_models: [{ model_name: engine.baseModelName }] });
    const isPost =
      route === routes.forwardBackward || route === routes.retrieveFuture || route in jsonRoutes;
    if (!isPost || method !== 'POST')
      throw new HttpError(
        404,
        `no route ${method} ${route}; \`teamtr serve --tinker\` implements: ${known.join(', ')}`,
      );
    const bytes = await readRequestBody(
      request,
      maxBodyBytes,
      (detail) => new HttpError(413, detail),
    );
    const key = request.headers['x-idempotency-key'];
    const remembered =
      typeof key === 'string' && route !== routes.retrieveFuture
        ? idempotent.get(`${route} ${key}`)
        : undefined;
    if (remembered) return sendJson(response, remembered.status, remembered.body);
    if (route === routes.forwardBackward) {
      if (!(request.headers['content-type'] ?? '').includes(protobufContentType))
        throw new HttpError(
          415,
          `${route} takes a ${protobufContentType} body (ForwardBackwardRequest), as the SDK sends it`,
        );
      const answer = forwardBackward(bytes);
      if (typeof key === 'string') idempotent.set(`${route} ${key}`, answer);
      return sendJson(response, answer.status, answer.body);
    }
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new HttpError(400, `${route}: the body is not JSON`);
    }
    if (route === routes.retrieveFuture)
      return retrieve(body, response, String(request.headers.accept ?? ''));
    const answer = jsonRoutes[route]!(body);
    if (typeof key === 'string') idempotent.set(`${route} ${key}`, answer);
    return sendJson(response, answer.status, answer.body);
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const status = error instanceof HttpError ? error.status : 500;
      if (!response.headersSent) sendJson(response, status, { detail: (error as Error).message });
      else response.destroy();
    });
  });
  const host = options.host ?? '127.0.0.1';
  await listenOrExplain(server, host, options.port ?? 8000);
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}
