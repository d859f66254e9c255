import type { z } from 'zod';
import {
  TinkerApiKeyError,
  TinkerFutureExpiredError,
  TinkerRequestFailedError,
  TinkerResponseError,
  TinkerTimeoutError,
} from './errors.js';
import { send, serverMessage, type HttpAnswer, type TransportSettings } from './http.js';
import {
  createModelResponseSchema,
  createSamplingSessionResponseSchema,
  createSessionResponseSchema,
  followedSdkVersion,
  futureFailureSchema,
  loraConfigBody,
  routes,
  untypedFutureSchema,
} from './json-wire.js';
import {
  decodeForwardBackwardOutput,
  decodeSampleResponse,
  protobufContentType,
} from './wire-codec.js';
import type { ForwardBackwardResult, LoraSettings, SampleResult } from './types.js';
import { TinkerTrainingModel } from './training-model.js';
import { checkJson, type FutureResultKind, type TinkerConnection } from './connection.js';
import { TinkerSampler } from './sampler.js';

/**
 * A TypeScript client of the Tinker training API (wire formats of the Python SDK `tinker`
 * 0.25.0): a session kept alive by heartbeats, LoRA training models (forward, forward_backward,
 * optim_step, weights), and samplers. Long operations return futures that the client polls
 * through `retrieve_future` until they finish, fail, or pass `futureTimeoutMs`.
 *
 * The API key comes from the environment (`TINKER_API_KEY` unless `apiKeyEnv` says otherwise)
 * and goes only into the X-API-Key header: never into an error, a log or a run directory.
 */

export interface TinkerClientOptions {
  /** The service root, before /api/v1 (e.g. "http://127.0.0.1:8000"). */
  baseURL: string;
  /** Environment variable holding the API key. @default "TINKER_API_KEY" */
  apiKeyEnv?: string;
  /** Per HTTP attempt. @default 60_000 */
  timeoutMs?: number;
  /** Further attempts after 408, 429, 5xx, a timeout or a lost connection. @default 5 */
  maxRetries?: number;
  /** First backoff, doubled per attempt up to 10 s. @default 500 */
  retryDelayMs?: number;
  /** How long a future may take, polling included. @default 600_000 */
  futureTimeoutMs?: number;
  /** @default 10_000 (the SDK's period) */
  heartbeatIntervalMs?: number;
  /** Tags recorded with the session. */
  tags?: string[];
  /** Where the environment is read. @default process.env */
  environment?: Record<string, string | undefined>;
}

export class TinkerClient implements TinkerConnection {
  /** Heartbeats that failed since the last one that got through. */
  failedHeartbeats = 0;
  private heartbeat: NodeJS.Timeout | null = null;
  private modelCount = 0;
  private samplerCount = 0;

  private constructor(
    readonly transport: TransportSettings,
    readonly sessionId: string,
    readonly futureTimeoutMs: number,
  ) {}

  /** Reads the API key, opens a session and starts its heartbeats. */
  static async connect(options: TinkerClientOptions): Promise<TinkerClient> {
    const variable = options.apiKeyEnv ?? 'TINKER_API_KEY';
    const apiKey = (options.environment ?? process.env)[variable];
    if (!apiKey) throw new TinkerApiKeyError(variable);
    const transport: TransportSettings = {
      baseURL: options.baseURL.replace(/\/+$/, ''),
      apiKey,
      timeoutMs: options.timeoutMs ?? 60_000,
      maxRetries: options.maxRetries ?? 5,
      retryDelayMs: options.retryDelayMs ?? 500,
    };
    const answer = await send(
      routes.createSession,
      {
        // user_metadata: the SDK always sends it (`{}` when none), and its CreateSessionRequest
        // declares it without a default, so a service validating with that model requires it.
        json: {
          tags: options.tags ?? [],
          user_metadata: {},
          sdk_version: followedSdkVersion,
          type: 'create_session',
        },
      },
      transport,
    );
    const session = parseJson(routes.createSession, answer, createSessionResponseSchema);
    const client = new TinkerClient(
      transport,
      session.session_id,
      options.futureTimeoutMs ?? 600_000,
    );
    client.startHeartbeat(options.heartbeatIntervalMs ?? 10_000);
    return client;
  }

  private startHeartbeat(intervalMs: number): void {
    this.heartbeat = setInterval(() => {
      send(
        routes.sessionHeartbeat,
        { json: { session_id: this.sessionId, type: 'session_heartbeat' } },
        { ...this.transport, maxRetries: 0 },
      ).then(
        () => (this.failedHeartbeats = 0),
        () => this.failedHeartbeats++,
      );
    }, intervalMs);
    this.heartbeat.unref();
  }

  async post<Schema extends z.ZodType>(
    route: string,
    body: unknown,
    schema: Schema,
  ): Promise<z.output<Schema>> {
    return parseJson(route, await send(route, { json: body }, this.transport), schema);
  }

  async submit(
    route: string,
    body: { json?: unknown; protobuf?: Uint8Array },
    kind: FutureResultKind,
  ): Promise<unknown> {
    const future = parseJson(route, await send(route, body, this.transport), untypedFutureSchema);
    return this.retrieve(route, future.request_id, kind);
  }

  /**
   * Polls retrieve_future: a 408 or a `try_again` answer means "still running"; an `error`
   * answer is the request's failure; anything else is the result (protobuf for
   * forward/backward outputs and samples, JSON otherwise).
   */
  async retrieve(route: string, requestId: string, kind: FutureResultKind): Promise<unknown> {
    const started = Date.now();
    for (let iteration = 0; ; iteration++) {
      if (Date.now() - started > this.futureTimeoutMs)
        throw new TinkerTimeoutError(route, requestId, this.futureTimeoutMs / 1000);
      const headers: Record<string, string> = { 'x-tinker-request-iteration': String(iteration) };
      if (kind !== 'json') headers.accept = protobufContentType;
      const answer = await send(
        routes.retrieveFuture,
        {
          json: { request_id: requestId, allow_metadata_only: false },
          headers,
          passThrough408: true,
        },
        this.transport,
      );
      if (answer.status === 408) continue;
      if (answer.status === 410) throw new TinkerFutureExpiredError(route, requestId);
      if (answer.contentType.includes(protobufContentType)) {
        if (kind === 'json')
          throw new TinkerResponseError(route, 'a protobuf answer where JSON was expected');
        try {
          return kind === 'forwardBackward'
            ? decodeForwardBackwardOutput(answer.bytes)
            : decodeSampleResponse(answer.bytes);
        } catch (error) {
          throw new TinkerResponseError(route, (error as Error).message);
        }
      }
      const json = parseJsonBody(route, answer);
      const record = json as Record<string, unknown>;
      if (record?.type === 'try_again') continue;
      if (record && typeof record === 'object' && 'error' in record) {
        const failure = futureFailureSchema.safeParse(record);
        if (!failure.success)
          throw new TinkerResponseError(route, 'an error answer without a message');
        throw new TinkerRequestFailedError(
          route,
          requestId,
          failure.data.category,
          failure.data.error,
        );
      }
      if (kind !== 'json')
        throw new TinkerResponseError(
          route,
          `JSON where a protobuf ${kind === 'sample' ? 'SampleResponse' : 'ForwardBackwardOutput'} was expected (the service predates protobuf answers)`,
        );
      return json;
    }
  }

  /** A new LoRA model on `baseModel`, trained through the returned handle. */
  async createTrainingModel(options: {
    baseModel: string;
    lora: LoraSettings;
  }): Promise<TinkerTrainingModel> {
    const result = await this.submit(
      routes.createModel,
      {
        json: {
          session_id: this.sessionId,
          model_seq_id: this.modelCount++,
          base_model: options.baseModel,
          lora_config: loraConfigBody(options.lora),
          type: 'create_model',
        },
      },
      'json',
    );
    const created = checkJson(routes.createModel, result, createModelResponseSchema);
    return new TinkerTrainingModel(this, created.model_id);
  }

  /** A sampler over saved sampler weights (a `tinker://` path) or the base model. */
  async createSampler(
    source: { modelPath: string } | { baseModel: string },
  ): Promise<TinkerSampler> {
    const answer = await this.post(
      routes.createSamplingSession,
      {
        session_id: this.sessionId,
        sampling_session_seq_id: this.samplerCount++,
        ...('modelPath' in source
          ? { model_path: source.modelPath }
          : { base_model: source.baseModel }),
        type: 'create_sampling_session',
      },
      createSamplingSessionResponseSchema,
    );
    return new TinkerSampler(this, answer.sampling_session_id);
  }

  /** Stops the heartbeats (the service ends the session when they stop). */
  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}

export type { ForwardBackwardResult, SampleResult };

function parseJsonBody(route: string, answer: HttpAnswer): unknown {
  try {
    return JSON.parse(Buffer.from(answer.bytes).toString('utf8'));
  } catch {
    throw new TinkerResponseError(
      route,
      `not JSON (HTTP ${answer.status}, body starts ${JSON.stringify(serverMessage(answer.bytes).slice(0, 80))})`,
    );
  }
}

function parseJson<Schema extends z.ZodType>(
  route: string,
  answer: HttpAnswer,
  schema: Schema,
): z.output<Schema> {
  return checkJson(route, parseJsonBody(route, answer), schema);
}
