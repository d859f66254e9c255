import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, test } from 'node:test';
import { TinkerClient, type TinkerClientOptions } from './client.js';
import {
  TinkerApiKeyError,
  TinkerRequestFailedError,
  TinkerResponseError,
  TinkerTimeoutError,
  TinkerUnavailableError,
} from './errors.js';
import {
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
} from './wire-codec.js';

/**
 * The client against a scripted in-test HTTP server: each route answers what the test says,
 * so retries, futures, timeouts and every error path are exercised on real HTTP.
 */

interface Received {
  route: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}
type Answer = { status?: number; json?: unknown; protobuf?: Uint8Array; text?: string };
type Handler = (received: Received, count: number) => Answer;

const apiKey = 'tml-secret-key-for-tests';
let server: Server | null = null;

async function fakeService(handlers: Record<string, Handler>) {
  const received: Received[] = [];
  const counts = new Map<string, number>();
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const route = request.url!;
      const entry = { route, headers: request.headers, body: Buffer.concat(chunks) };
      received.push(entry);
      const count = (counts.get(route) ?? 0) + 1;
      counts.set(route, count);
      const handler = handlers[route];
      const answer: Answer = handler
        ? handler(entry, count)
        : { status: 404, json: { detail: 'no' } };
      const status = answer.status ?? 200;
      if (answer.protobuf) {
        response.writeHead(status, { 'content-type': 'application/x-protobuf' });
        response.end(answer.protobuf);
      } else if (answer.text !== undefined) {
        response.writeHead(status, { 'content-type': 'text/plain' });
        response.end(answer.text);
      } else {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(answer.json ?? {}));
      }
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseURL: `http://127.0.0.1:${port}`, received };
}

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

const session: Handler = () => ({ json: { type: 'create_session', session_id: 'session-1' } });
const options = (baseURL: string): TinkerClientOptions => ({
  baseURL,
  environment: { TINKER_API_KEY: apiKey },
  retryDelayMs: 1,
  maxRetries: 2,
  futureTimeoutMs: 2_000,
});
const json = (received: Received) => JSON.parse(received.body.toString('utf8'));

describe('TinkerClient', () => {
  test('a missing API key is an error naming the variable, before any request', async () => {
    const { baseURL, received } = await fakeService({});
    await assert.rejects(
      TinkerClient.connect({ baseURL, environment: {}, apiKeyEnv: 'MY_TINKER_KEY' }),
      (error: Error) => error instanceof TinkerApiKeyError && /MY_TINKER_KEY/.test(error.message),
    );
    assert.equal(received.length, 0);
  });

  test('trains through futures: try_again and 408 are polled, protobuf answers decoded', async () => {
    const output = encodeForwardBackwardOutput({
      lossOutputs: [{ logprobs: { dtype: 'float32', data: [-1, -2], shape: [2] } }],
      metrics: { 'loss:sum': 3 },
    });
    const { baseURL, received } = await fakeService({
      '/api/v1/create_session': session,
      '/api/v1/create_model': () => ({ json: { request_id: 'create-1', model_id: 'model-7' } }),
      '/api/v1/forward_backward': () => ({ json: { request_id: 'fb-1' } }),
      '/api/v1/optim_step': () => ({ json: { request_id: 'optim-1' } }),
      '/api/v1/retrieve_future': (request, count) => {
        const id = json(request).request_id;
        if (id === 'create-1') return { json: { model_id: 'model-7', type: 'create_model' } };
        if (id === 'optim-1') return { json: { metrics: { 'optim/lr': 0.5 } } };
        if (count === 2)
          return { json: { type: 'try_again', request_id: id, queue_state: 'active' } };
        if (count === 3) return { status: 408, json: { type: 'try_again', queue_state: 'active' } };
        return { protobuf: output };
      },
    });
    const client = await TinkerClient.connect(options(baseURL));
    const model = await client.createTrainingModel({ baseModel: 'base', lora: { rank: 4 } });
    assert.equal(model.modelId, 'model-7');
    const datum = {
      inputTokens: [1, 2],
      lossInputs: {
        target_tokens: { dtype: 'int64' as const, data: [2, 3], shape: [2] },
        weights: { dtype: 'float32' as const, data: [1, 1], shape: [2] },
      },
    };
    const result = await model.forwardBackward([datum], 'cross_entropy');
    const metrics = await model.optimStep({ learningRate: 0.5 });
    client.close();

    assert.deepEqual(result.lossOutputs[0]!.logprobs!.data, [-1, -2]);
    assert.deepEqual(result.metrics, { 'loss:sum': 3 });
    assert.deepEqual(metrics, { 'optim/lr': 0.5 });
    const createModel = json(received.find((entry) => entry.route === '/api/v1/create_model')!);
    assert.deepEqual(createModel, {
      session_id: 'session-1',
      model_seq_id: 0,
      base_model: 'base',
      lora_config: { rank: 4, train_unembed: true, train_mlp: true, train_attn: true },
      type: 'create_model',
    });
    const forward = received.find((entry) => entry.route === '/api/v1/forward_backward')!;
    assert.equal(forward.headers['content-type'], 'application/x-protobuf');
    const decoded = decodeForwardBackwardRequest(new Uint8Array(forward.body));
    assert.deepEqual(decoded.data, [datum]);
    assert.equal(decoded.seqId, 1);
    const optim = json(received.find((entry) => entry.route === '/api/v1/optim_step')!);
    assert.equal(optim.seq_id, 2);
    assert.equal(optim.adam_params.learning_rate, 0.5);
    assert.equal(optim.adam_params.beta2, 0.95);
    assert.ok(received.every((entry) => entry.headers['x-api-key'] === apiKey));
  });

  test('a 429 storm ends after maxRetries + 1 attempts with TinkerUnavailableError', async () => {
    const { baseURL, received } = await fakeService({
      '/api/v1/create_session': () => ({ status: 429, json: { detail: 'slow down' } }),
    });
    await assert.rejects(TinkerClient.connect(options(baseURL)), (error: Error) => {
      assert.ok(error instanceof TinkerUnavailableError);
      assert.match(
        error.message,
        /\/api\/v1\/create_session: HTTP 429: slow down \(gave up after 3 attempts/,
      );
      assert.ok(!error.message.includes(apiKey));
      return true;
    });
    assert.equal(received.length, 3);
    assert.equal(new Set(received.map((entry) => entry.headers['x-idempotency-key'])).size, 1);
  });

  test('a 5xx then success is retried transparently', async () => {
    const { baseURL, received } = await fakeService({
      '/api/v1/create_session': (_request, count) =>
        count === 1 ? { status: 503, json: { detail: 'restarting' } } : session(_request, count),
    });
    const client = await TinkerClient.connect(options(baseURL));
    client.close();
    assert.equal(client.sessionId, 'session-1');
    assert.equal(received.length, 2);
  });

  test('a dead server is an error saying the connection was refused', async () => {
    const { baseURL } = await fakeService({});
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = null;
    await assert.rejects(
      TinkerClient.connect(options(baseURL)),
      (error: Error) =>
        error instanceof TinkerUnavailableError &&
        /connection refused .*is the service running/.test(error.message),
    );
  });

  test('malformed answers are TinkerResponseError naming the route', async () => {
    const { baseURL } = await fakeService({
      '/api/v1/create_session': (_request, count) =>
        count === 1
          ? { text: '<html>proxy</html>' }
          : count === 2
            ? { json: { id: 1 } }
            : session(_request, count),
      '/api/v1/create_sampling_session': () => ({ json: { sampling_session_id: 's-1' } }),
      '/api/v1/asample': () => ({ json: { request_id: 'sample-1' } }),
      '/api/v1/retrieve_future': () => ({ protobuf: new Uint8Array([0x0a, 0x05, 0x01]) }),
    });
    await assert.rejects(
      TinkerClient.connect(options(baseURL)),
      /create_session: malformed response: not JSON/,
    );
    await assert.rejects(
      TinkerClient.connect(options(baseURL)),
      /create_session: malformed response: session_id/,
    );
    const client = await TinkerClient.connect(options(baseURL));
    const sampler = await client.createSampler({ baseModel: 'base' });
    await assert.rejects(
      sampler.sample({ prompt: [1], parameters: { maxTokens: 2 } }),
      (error: Error) =>
        error instanceof TinkerResponseError && /\/api\/v1\/asample/.test(error.message),
    );
    client.close();
  });

  test('a failed future is TinkerRequestFailedError; a future that never ends times out', async () => {
    const { baseURL } = await fakeService({
      '/api/v1/create_session': session,
      '/api/v1/create_model': () => ({ json: { request_id: 'create-1' } }),
      '/api/v1/create_sampling_session': () => ({ json: { sampling_session_id: 's-1' } }),
      '/api/v1/asample': () => ({ json: { request_id: 'sample-1' } }),
      '/api/v1/retrieve_future': (request) =>
        json(request).request_id === 'create-1'
          ? { json: { error: 'unknown base model "nope"', category: 'user' } }
          : { json: { type: 'try_again', request_id: 'sample-1', queue_state: 'active' } },
    });
    const client = await TinkerClient.connect({ ...options(baseURL), futureTimeoutMs: 100 });
    await assert.rejects(
      client.createTrainingModel({ baseModel: 'nope', lora: { rank: 2 } }),
      (error: Error) =>
        error instanceof TinkerRequestFailedError &&
        error.category === 'user' &&
        /unknown base model "nope".*retrying will not help/.test(error.message),
    );
    const sampler = await client.createSampler({ baseModel: 'base' });
    await assert.rejects(
      sampler.sample({ prompt: [1], parameters: { maxTokens: 2 } }),
      TinkerTimeoutError,
    );
    client.close();
  });

  test('samples decode with their log-probs; the request follows the SDK field names', async () => {
    const { baseURL, received } = await fakeService({
      '/api/v1/create_session': session,
      '/api/v1/create_sampling_session': () => ({ json: { sampling_session_id: 's-1' } }),
      '/api/v1/asample': () => ({ json: { request_id: 'sample-1' } }),
      '/api/v1/retrieve_future': () => ({
        protobuf: encodeSampleResponse({
          sequences: [{ tokens: [4, 5], logProbs: [-0.5, -0.25], stopReason: 'length' }],
          promptLogProbs: null,
        }),
      }),
    });
    const client = await TinkerClient.connect(options(baseURL));
    const sampler = await client.createSampler({ modelPath: 'tinker://model-1/sampler_weights/a' });
    const result = await sampler.sample({ prompt: [1, 2], parameters: { maxTokens: 2, seed: 9 } });
    client.close();
    assert.deepEqual(result.sequences[0], {
      tokens: [4, 5],
      logProbs: [-0.5, -0.25],
      stopReason: 'length',
    });
    const sample = json(received.find((entry) => entry.route === '/api/v1/asample')!);
    assert.deepEqual(sample.prompt, { chunks: [{ tokens: [1, 2], type: 'encoded_text' }] });
    assert.deepEqual(sample.sampling_params, {
      max_tokens: 2,
      seed: 9,
      temperature: 1,
      top_k: -1,
      top_p: 1,
    });
    assert.equal(sample.sampling_session_id, 's-1');
    const retrieve = received.find((entry) => entry.route === '/api/v1/retrieve_future')!;
    assert.equal(retrieve.headers.accept, 'application/x-protobuf');
  });
});
