import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { writeHuggingFaceFixture } from '../../models/test-support/huggingface-fixture.js';
import { FutureStore, IdempotencyCache } from './futures.js';
import { EngineUserError, LocalTinkerEngine } from './local-engine.js';
import { startTinkerService, type RunningTinkerService } from './server.js';

/**
 * What `teamtr serve --tinker` holds stays bounded whatever clients send, and it has the guards
 * every teamtr server shares: the Host check, content types, body size, parameter bounds.
 */
const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-tinker-bounds-'));
const baseDirectory = path.join(root, 'tiny-qwen');
let service: RunningTinkerService;
let clock = 0;
const log: string[] = [];

before(async () => {
  writeHuggingFaceFixture(baseDirectory, { modelType: 'qwen2' });
  service = await startTinkerService({
    engine: new LocalTinkerEngine('tiny-qwen', baseDirectory, { maxSamplesPerRequest: 8 }),
    port: 0,
    pollWaitMs: 200,
    maxBodyBytes: 4096,
    futures: { now: () => clock, ttlMs: 600_000, retrievedGraceMs: 30_000 },
    log: (line) => log.push(line),
  });
});

after(async () => {
  await service.close();
  rmSync(root, { recursive: true, force: true });
});

async function post(route: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${service.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** The status of a raw request with these header lines (fetch cannot send two Hosts). */
function rawStatus(headers: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(service.port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 0)));
    socket.on('error', reject);
    socket.write(
      `GET /api/v1/healthz HTTP/1.1\r\n${headers.map((line) => `${line}\r\n`).join('')}Connection: close\r\n\r\n`,
    );
  });
}

/** Heap in use after a full collection (the figure the test reports, not asserts). */
function heapAfterCollection(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

async function newSession(): Promise<string> {
  const created = await post('/api/v1/create_session', { tags: [], sdk_version: '0.25.0' });
  return created.json.session_id as string;
}

/** A future's outcome, polled as the SDK does: a loaded machine may not finish in one wait. */
async function result(requestId: string) {
  for (;;) {
    const answer = await post('/api/v1/retrieve_future', { request_id: requestId });
    if (answer.json.type !== 'try_again') return answer;
  }
}

describe('teamtr serve --tinker: bounds and guards', () => {
  test('10,000 requests leave a bounded number of futures and idempotent answers', async () => {
    const session = await newSession();
    const heapBefore = heapAfterCollection();
    for (let batch = 0; batch < 100; batch++) {
      const sent = await Promise.all(
        Array.from({ length: 100 }, (_value, offset) => {
          clock += 1_000;
          return post(
            '/api/v1/create_sampling_session',
            {
              session_id: session,
              sampling_session_seq_id: batch * 100 + offset,
              base_model: 'tiny-qwen',
            },
            { 'x-idempotency-key': `key-${batch * 100 + offset}` },
          );
        }),
      );
      assert.ok(sent.every(({ status }) => status === 200));
    }
    for (let index = 0; index < 200; index++) {
      clock += 1_000;
      const started = await post('/api/v1/get_info', { model_id: 'none' });
      assert.equal(started.status, 404);
    }
    // Futures: run and retrieve 2,000; each is dropped 30 s (simulated) after retrieval.
    for (let index = 0; index < 2_000; index++) {
      clock += 1_000;
      const created = await post('/api/v1/unload_model', { model_id: `none-${index}` });
      const answer = await result(created.json.request_id as string);
      assert.match(String(answer.json.error), /unknown model_id/);
    }
    const retained = service.state.futures.size;
    const remembered = service.idempotency.size;
    const heapGrowth = heapAfterCollection() - heapBefore;
    process.stdout.write(
      `# after 12,200 requests: ${retained} futures, ${remembered} idempotent answers, ${service.state.samplers.size} samplers retained; heap +${(heapGrowth / 2 ** 20).toFixed(1)} MiB\n`,
    );
    assert.ok(retained <= 31, `${retained} futures retained`);
    // 600 s of simulated time at one request a second: at most ~600 keys live.
    assert.ok(remembered <= 601, `${remembered} idempotent answers retained`);
    assert.ok(service.state.samplers.size <= 10_000);
  });

  test('a pruned future is 410 Gone (send again); an id never issued is 404', async () => {
    const created = await post('/api/v1/unload_model', { model_id: 'gone' });
    const id = created.json.request_id as string;
    await result(id);
    assert.equal((await result(id)).status, 200, 'a retried retrieve still finds it');
    clock += 31_000;
    await post('/api/v1/unload_model', { model_id: 'other' });
    assert.equal((await result(id)).status, 410);
    assert.equal((await result('never-issued')).status, 404);
  });

  test('the future store and the idempotency cache drop their oldest past maxEntries', () => {
    const futures = new FutureStore({ maxEntries: 5 });
    const cache = new IdempotencyCache<number>({ maxEntries: 5 });
    for (let index = 0; index < 50; index++) {
      futures.enqueue(() => ({ kind: 'json', body: index }));
      cache.set(`k${index}`, index);
    }
    assert.ok(futures.size <= 6);
    assert.equal(cache.size, 5);
    assert.equal(cache.get('k49'), 49);
    assert.equal(cache.get('k0'), undefined);
  });

  test('Host guard: another name is 421, an empty one 421, two Host headers 400', async () => {
    assert.equal(await rawStatus([`Host: 127.0.0.1:${service.port}`]), 200);
    assert.equal(await rawStatus(['Host: evil.example']), 421);
    assert.equal(await rawStatus(['Host: ']), 421);
    assert.equal(
      await rawStatus([`Host: 127.0.0.1:${service.port}`, `Host: 127.0.0.1:${service.port}`]),
      400,
    );
  });

  test('a text/plain body is 415 (a cross-site form); a body past --max-body-bytes is 413', async () => {
    const plain = await fetch(`${service.url}/api/v1/create_session`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ tags: [], sdk_version: '0.25.0' }),
    });
    assert.equal(plain.status, 415);
    const large = await post('/api/v1/create_session', {
      tags: ['x'.repeat(5000)],
      sdk_version: '0.25.0',
    });
    assert.equal(large.status, 413);
    assert.ok(
      log.some((line) => / 413 \d+ ms — .*limit/.test(line)),
      log.slice(-3).join('\n'),
    );
  });

  test('an unknown parameter is refused by name', async () => {
    const refused = await post('/api/v1/create_session', {
      tags: [],
      sdk_version: '0.25.0',
      sdk_verison: 'x',
    });
    assert.equal(refused.status, 400);
    assert.match(String(refused.json.detail), /unknown parameter "sdk_verison"/);
  });

  test('a refusal names its route; a session route refuses an unknown session_id', async () => {
    const bodies: [string, Record<string, unknown>][] = [
      ['/api/v1/session_heartbeat', { session_id: 'nope' }],
      ['/api/v1/create_model', { session_id: 'nope', model_seq_id: 0, base_model: 'tiny-qwen' }],
      ['/api/v1/create_sampling_session', { session_id: 'nope', sampling_session_seq_id: 0 }],
    ];
    for (const [route, body] of bodies) {
      const refused = await post(route, body);
      assert.equal(refused.status, 404, route);
      assert.equal(refused.json.detail, 'unknown session_id "nope" (call create_session first)');
    }
    const malformed = await post('/api/v1/optim_step', { model_id: 'x' });
    assert.equal(malformed.status, 400);
    assert.match(String(malformed.json.detail), /^\/api\/v1\/optim_step: adam_params: /);
    const noLora = await post('/api/v1/create_model', {
      session_id: await newSession(),
      model_seq_id: 0,
      base_model: 'tiny-qwen',
    });
    assert.match(String(noLora.json.detail), /^\/api\/v1\/create_model: lora_config is required/);
  });

  test('lora rank past the model, num_samples past the limit: clear user errors', async () => {
    const session = await newSession();
    const created = await post('/api/v1/create_model', {
      session_id: session,
      model_seq_id: 0,
      base_model: 'tiny-qwen',
      lora_config: { rank: 1_000_000 },
    });
    const failed = await result(created.json.request_id as string);
    assert.equal(failed.json.category, 'user');
    assert.match(
      String(failed.json.error),
      /lora_config.rank 1000000 .* give a rank from 1 to \d+/,
    );
    const sampled = await post('/api/v1/asample', {
      num_samples: 1_000_000,
      prompt: { chunks: [{ type: 'encoded_text', tokens: [1, 2] }] },
      sampling_params: { max_tokens: 2 },
      base_model: 'tiny-qwen',
    });
    const refused = await result(sampled.json.request_id as string);
    assert.match(
      String(refused.json.error),
      /num_samples 1000000 is more than this server's limit of 8/,
    );
  });
});

describe('the local engine: seeds and saved weights', () => {
  test('LoRA initialization and sampling are random unless seeded, equal when seeded', async () => {
    const engine = new LocalTinkerEngine('tiny-qwen', baseDirectory);
    const adapters = async (seed?: number) => {
      const id = await engine.createModel('tiny-qwen', { rank: 2, seed });
      const path = engine.saveWeights(id, `init-${id}`, 'weights');
      return Array.from(engine.store.load(path).snapshot.parameters[0]!);
    };
    assert.notDeepEqual(await adapters(), await adapters());
    assert.deepEqual(await adapters(7), await adapters(7));
    const draw = (seed?: number) =>
      engine.sample(
        { baseModel: 'tiny-qwen' },
        { prompt: [1, 2, 3], parameters: { maxTokens: 8, seed }, numSamples: 2 },
      );
    const tokens = async (seed?: number) => (await draw(seed)).sequences.map((s) => s.tokens);
    assert.notDeepEqual(await tokens(), await tokens());
    assert.deepEqual(await tokens(5), await tokens(5));
  });

  test('saved weights: overwrite, ttl, the byte limit, and an index that survives a restart', async () => {
    const stateDirectory = path.join(root, 'state');
    const engine = new LocalTinkerEngine('tiny-qwen', baseDirectory, {
      stateDirectory,
      maxSavedBytes: 40_000,
    });
    const id = await engine.createModel('tiny-qwen', { rank: 2, seed: 1 });
    const first = engine.saveWeights(id, 'a', 'weights');
    assert.throws(() => engine.saveWeights(id, 'a', 'weights'), /exists already; .*overwrite=True/);
    engine.saveWeights(id, 'a', 'weights', { overwrite: true });
    const bytes = engine.store.usage.stored;
    assert.ok(bytes > 0 && bytes <= 40_000);
    assert.throws(
      () => {
        for (let index = 0; index < 100; index++)
          engine.saveWeights(id, `more-${index}`, 'weights');
      },
      (error: Error) => error instanceof EngineUserError && /--max-saved-bytes/.test(error.message),
    );
    assert.ok(engine.store.usage.stored <= 40_000);
    const files = readdirSync(stateDirectory).length;
    const restarted = new LocalTinkerEngine('tiny-qwen', baseDirectory, { stateDirectory });
    assert.equal(restarted.store.list().length, files);
    assert.equal(restarted.store.entry(first).lora.rank, 2);
    const sampled = await restarted.sample(
      { modelPath: first },
      { prompt: [1, 2], parameters: { maxTokens: 3, seed: 1 }, numSamples: 1 },
    );
    assert.equal(sampled.sequences[0]!.tokens.length, 3);
  });
});
