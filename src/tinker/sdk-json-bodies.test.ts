import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { TinkerClient } from './client.js';
import { routes } from './json-wire.js';
import { encodeSampleResponse } from './wire-codec.js';

/**
 * The JSON request bodies of every JSON route the client calls, compared with the bodies the
 * Python SDK itself produced for the same requests: scripts/tinker-sdk-json-fixtures.py builds
 * them with the SDK's own request types and dumps them as its resources do before POSTing
 * (`model_dump(request, exclude_unset=False, exclude_none=True, mode="json")`). The client is
 * driven through its public API against an in-test server, and each body it sent is checked.
 *
 * The comparison is deep equality after dropping the keys whose value is null in our body: the
 * SDK leaves a field out when it is unset (None, `exclude_none=True`), so null and absent mean
 * the same there. Everything else must match exactly: a key the SDK sends that we do not (or
 * the reverse) fails, as does any value, defaults included.
 */

const fixtures = JSON.parse(
  readFileSync(new URL('./test-support/sdk-fixtures.json', import.meta.url), 'utf8'),
) as { jsonRequests: Record<string, unknown> };
const sdkBodies = fixtures.jsonRequests;

const sessionId = 'session-1';
const modelId = 'model-1';
const samplingSessionId = 'sampling-1';
const baseModel = 'Qwen/Qwen3-8B';
const weightsPath = 'tinker://model-1/weights/step-1';
const samplerPath = 'tinker://model-1/sampler_weights/sampler-1';

function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, entry]) => entry !== null && entry !== undefined)
        .map(([key, entry]) => [key, withoutNulls(entry)]),
    );
  return value;
}

const sent: Array<{ route: string; body: unknown }> = [];
let server: Server;
let client: TinkerClient;

/** Answers each route with what the client needs to go on; futures resolve at once. */
function answer(route: string): { json?: unknown; protobuf?: Uint8Array } {
  switch (route) {
    case routes.createSession:
      return { json: { type: 'create_session', session_id: sessionId } };
    case routes.sessionHeartbeat:
      return { json: { type: 'session_heartbeat' } };
    case routes.createSamplingSession:
      return { json: { sampling_session_id: samplingSessionId } };
    case routes.getInfo:
      return { json: { model_id: modelId, model_data: { model_name: baseModel } } };
    case routes.retrieveFuture: {
      const submitted = [...sent]
        .reverse()
        .find(
          (entry) =>
            entry.route !== routes.retrieveFuture && entry.route !== routes.sessionHeartbeat,
        );
      switch (submitted?.route) {
        case routes.createModel:
          return { json: { model_id: modelId } };
        case routes.optimStep:
        case routes.loadWeights:
          return { json: { metrics: {} } };
        case routes.saveWeights:
          return { json: { path: weightsPath } };
        case routes.saveWeightsForSampler:
          return { json: { path: samplerPath } };
        case routes.sample:
          return {
            protobuf: encodeSampleResponse({
              sequences: [{ tokens: [4], logProbs: [-0.5], stopReason: 'stop' }],
              promptLogProbs: null,
            }),
          };
        default:
          throw new Error(`a future of ${submitted?.route}`);
      }
    }
    default:
      return { json: { request_id: 'request-1' } };
  }
}

before(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      sent.push({ route: request.url!, body });
      const reply = answer(request.url!);
      if (reply.protobuf) {
        response.writeHead(200, { 'content-type': 'application/x-protobuf' });
        response.end(reply.protobuf);
      } else {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(reply.json));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = await TinkerClient.connect({
    baseURL: `http://127.0.0.1:${port}`,
    environment: { TINKER_API_KEY: 'tml-test-key' },
    tags: ['teamtr', 'fixture'],
    heartbeatIntervalMs: 5,
    timeoutMs: 5_000,
    maxRetries: 0,
  });
});

after(async () => {
  client.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** The JSON bodies the client has sent to `route`, in order. */
function bodiesTo(route: string): unknown[] {
  return sent.filter((entry) => entry.route === route).map((entry) => entry.body);
}

function assertSdkBody(ours: unknown, fixture: string) {
  assert.ok(fixture in sdkBodies, `no SDK fixture ${fixture}`);
  assert.deepEqual(withoutNulls(ours), sdkBodies[fixture], fixture);
}

describe('JSON request bodies equal the Python SDK’s', () => {
  test('create_session and session_heartbeat', async () => {
    assertSdkBody(bodiesTo(routes.createSession)[0], 'createSession');
    while (bodiesTo(routes.sessionHeartbeat).length === 0)
      await new Promise((resolve) => setTimeout(resolve, 5));
    assertSdkBody(bodiesTo(routes.sessionHeartbeat)[0], 'sessionHeartbeat');
  });

  test('training: create_model, optim_step, weights, get_info, retrieve_future', async () => {
    const model = await client.createTrainingModel({ baseModel, lora: { rank: 32 } });
    await client.createTrainingModel({
      baseModel,
      lora: { rank: 8, seed: 7, trainUnembed: false, trainAttention: false },
    });
    assertSdkBody(bodiesTo(routes.createModel)[0], 'createModel');
    assertSdkBody(bodiesTo(routes.createModel)[1], 'createModelSeeded');

    await model.optimStep({ learningRate: 5e-5 });
    await model.optimStep({
      learningRate: 0.002,
      beta1: 0.8,
      beta2: 0.99,
      epsilon: 1e-8,
      weightDecay: 0.01,
      gradientClipNorm: 1.5,
    });
    assertSdkBody(bodiesTo(routes.optimStep)[0], 'optimStep');
    assertSdkBody(bodiesTo(routes.optimStep)[1], 'optimStepAllSet');

    assert.equal(await model.saveWeights('step-1'), weightsPath);
    assertSdkBody(bodiesTo(routes.saveWeights)[0], 'saveWeights');

    await model.loadWeights(weightsPath, { optimizer: true });
    await model.loadWeights(weightsPath, { optimizer: false });
    assertSdkBody(bodiesTo(routes.loadWeights)[0], 'loadWeights');
    assertSdkBody(bodiesTo(routes.loadWeights)[1], 'loadWeightsNoOptimizer');

    assert.equal(await model.saveWeightsForSampler('sampler-1'), samplerPath);
    assertSdkBody(bodiesTo(routes.saveWeightsForSampler)[0], 'saveWeightsForSampler');

    await model.info();
    assertSdkBody(bodiesTo(routes.getInfo)[0], 'getInfo');

    for (const body of bodiesTo(routes.retrieveFuture)) assertSdkBody(body, 'retrieveFuture');
  });

  test('sampling: create_sampling_session and asample', async () => {
    const sampler = await client.createSampler({ modelPath: samplerPath });
    await client.createSampler({ baseModel });
    assertSdkBody(bodiesTo(routes.createSamplingSession)[0], 'createSamplingSession');
    assertSdkBody(bodiesTo(routes.createSamplingSession)[1], 'createSamplingSessionBaseModel');

    await sampler.sample({
      prompt: [1, 5, 9],
      parameters: {
        maxTokens: 16,
        temperature: 0.7,
        topK: 40,
        topP: 0.9,
        seed: 7,
        stopTokens: [2, 3],
      },
      numSamples: 2,
    });
    await sampler.sample({ prompt: [4], parameters: { maxTokens: 8 }, promptLogProbs: true });
    assertSdkBody(bodiesTo(routes.sample)[0], 'sample');
    assertSdkBody(bodiesTo(routes.sample)[1], 'sampleDefaults');
  });
});
