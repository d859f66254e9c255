import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModel, type LoadedModel } from '../models/load.js';
import { writeHuggingFaceFixture } from '../models/test-support/huggingface-fixture.js';
import { scoreToArrays } from '../nn/score.js';
import type { Team } from '../team/team.js';
import { modelEndpoint, type ServedModel } from './endpoints.js';
import { teamEndpoint } from './team-endpoint.js';
import { startServer, type RunningServer } from './server.js';
import { charModel, charTeam, charTokenizer } from './test-support/char-team.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-serve-'));
const char = charTokenizer;

let qwen: LoadedModel;
let server: RunningServer;
let release: (() => void) | null = null;
const plain = charModel(1);
const team: Team = charTeam(['agent-0', 'agent-1'], ['Solve. ', 'Check. '], 10);
/** Holds its slot until the test releases it: makes "the server is busy" deterministic. */
const blocking: ServedModel = {
  id: 'blocking',
  complete: () =>
    new Promise((resolve) => {
      release = () =>
        resolve([
          {
            text: 'done',
            finishReason: 'stop',
            promptTokens: 1,
            completionTokens: 1,
            logprobs: null,
          },
        ]);
    }),
};

before(async () => {
  writeHuggingFaceFixture(path.join(root, 'qwen'), { modelType: 'qwen2' });
  qwen = await loadModel(path.join(root, 'qwen'));
  server = await startServer({
    port: 0,
    maxBodyBytes: 4096,
    maxConcurrent: 1,
    maxQueued: 0,
    endpoints: [
      modelEndpoint({
        id: 'qwen',
        model: qwen.model,
        tokenizer: qwen.tokenizer,
        generation: qwen.generation,
      }),
      modelEndpoint({ id: 'plain', model: plain, tokenizer: char, promptFormat: 'plain' }),
      teamEndpoint('team', team),
      blocking,
    ],
  });
});
after(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

// Response bodies are checked field by field; typing every OpenAI shape here would add nothing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function post(
  route: string,
  body: unknown,
): Promise<{ status: number; json: Json; text: string }> {
  const response = await fetch(`${server.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // streams are not JSON
  }
  return { status: response.status, json, text };
}

const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'qwen',
  messages: [{ role: 'user', content: 'the sum of 12 and 3?' }],
  max_tokens: 12,
  seed: 7,
  ...extra,
});

describe('teamtr serve: OpenAI-compatible HTTP', () => {
  test('binds 127.0.0.1 and lists the served models', async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await fetch(`${server.url}/v1/models`);
    const body = (await response.json()) as { data: Array<{ id: string }> };
    assert.deepEqual(
      body.data.map((entry) => entry.id),
      ['qwen', 'plain', 'team', 'blocking'],
    );
  });

  test('chat completions: seeded and reproducible; streaming delivers the same text', async () => {
    const first = await post('/v1/chat/completions', chat());
    assert.equal(first.status, 200);
    assert.equal(first.json.object, 'chat.completion');
    const { message, finish_reason: finishReason } = first.json.choices[0];
    assert.equal(message.role, 'assistant');
    assert.ok(['stop', 'length'].includes(finishReason));
    assert.deepEqual((await post('/v1/chat/completions', chat())).json.choices[0].message, message);
    assert.ok(first.json.usage.prompt_tokens > 5 && first.json.usage.completion_tokens <= 12);

    const streamed = await post(
      '/v1/chat/completions',
      chat({ stream: true, stream_options: { include_usage: true } }),
    );
    const events = streamed.text
      .split('\n\n')
      .filter(Boolean)
      .map((event) => event.replace(/^data: /, ''));
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event));
    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    const content = chunks
      .filter((chunk) => chunk.choices.length > 0)
      .map((chunk) => chunk.choices[0].delta.content ?? '')
      .join('');
    assert.equal(content, message.content);
    assert.equal(chunks.at(-2).choices[0].finish_reason, finishReason);
    assert.deepEqual(chunks.at(-1).usage, first.json.usage);
  });

  test('stop strings cut the text; max_tokens ends with "length"', async () => {
    const full = await post('/v1/completions', {
      model: 'plain',
      prompt: 'Q: 1+2?\nA:',
      max_tokens: 30,
      temperature: 0,
    });
    const text: string = full.json.choices[0].text;
    assert.equal(full.json.choices[0].finish_reason, 'length');
    assert.equal(full.json.usage.completion_tokens, 30);
    const stop = text.slice(5, 7);
    const cut = await post('/v1/completions', {
      model: 'plain',
      prompt: 'Q: 1+2?\nA:',
      max_tokens: 30,
      temperature: 0,
      stop: [stop],
    });
    assert.equal(cut.json.choices[0].text, text.slice(0, text.indexOf(stop)));
    assert.equal(cut.json.choices[0].finish_reason, 'stop');
  });

  test("logprobs are the model's own log-probabilities of the sampled tokens", async () => {
    const prompt = 'Q: 3+4?\nA:';
    const response = await post('/v1/chat/completions', {
      model: 'plain',
      messages: [{ role: 'user', content: prompt }],
      max_tokens: 6,
      seed: 3,
      logprobs: true,
      top_logprobs: 2,
    });
    const entries = response.json.choices[0].logprobs.content as Array<{
      token: string;
      logprob: number;
      top_logprobs: Array<{ logprob: number }>;
    }>;
    assert.equal(entries.length, 6);
    const tokens = entries.map((entry) => char.tokenToId(entry.token)!);
    const [scored] = scoreToArrays(plain, [
      { context: [char.bosId, ...char.encode(prompt)], completion: tokens },
    ]);
    entries.forEach((entry, index) => {
      assert.ok(Math.abs(entry.logprob - scored!.logProbs[index]!) < 1e-4);
      assert.equal(entry.top_logprobs.length, 2);
      assert.ok(entry.top_logprobs[0]!.logprob >= entry.logprob - 1e-9);
    });
  });

  test('bad requests get OpenAI-style errors', async () => {
    const cases: Array<[string, unknown, number, RegExp]> = [
      ['/v1/chat/completions', '{"model": ', 400, /not valid JSON/],
      [
        '/v1/chat/completions',
        { ...chat(), model: 'nope' },
        404,
        /model "nope" not found \(available: qwen, plain, team, blocking\)/,
      ],
      ['/v1/chat/completions', { model: 'qwen' }, 400, /messages/],
      ['/v1/chat/completions', chat({ n: 20 }), 400, /n: give 1 to 16 samples, got 20/],
      [
        '/v1/chat/completions',
        chat({ n: 2, stream: true }),
        400,
        /several samples are served without streaming/,
      ],
      ['/v1/chat/completions', chat({ temperature: 5 }), 400, /temperature/],
      [
        '/v1/chat/completions',
        chat({ messages: [{ role: 'user', content: 'x'.repeat(5000) }] }),
        413,
        /limit is 4096|exceeds the limit/,
      ],
      [
        '/v1/completions',
        { model: 'plain', prompt: 'x'.repeat(200) },
        400,
        /the prompt has 201 tokens; this model's context is 96/,
      ],
      ['/v1/embeddings', {}, 404, /no route POST \/v1\/embeddings/],
    ];
    for (const [route, body, status, pattern] of cases) {
      const response = await post(route, body);
      assert.equal(response.status, status, `${route} ${pattern}`);
      assert.match(response.json.error.message, pattern);
    }
  });

  test('beyond the concurrency limit requests get 429 with Retry-After', async () => {
    const busy = post('/v1/chat/completions', {
      model: 'blocking',
      messages: [{ role: 'user', content: 'hi' }],
    });
    while (!release) await new Promise((resolve) => setTimeout(resolve, 5));
    const refused = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat()),
    });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    release!();
    assert.equal((await busy).json.choices[0].message.content, 'done');
    assert.equal((await post('/v1/chat/completions', chat())).status, 200);
  });
});

describe('teamtr serve: requests it must refuse', () => {
  let hardened: RunningServer;
  before(async () => {
    hardened = await startServer({
      endpoints: [
        modelEndpoint({ id: 'echo', model: plain, tokenizer: char, promptFormat: 'plain' }),
      ],
      port: 0,
    });
  });
  after(() => hardened.close());
  const send = (headers: Record<string, string>, body: unknown) =>
    fetch(`${hardened.url}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const request = { model: 'echo', messages: [{ role: 'user', content: 'hi' }] };

  test('a body that is not declared JSON is refused (a cross-site form cannot post it)', async () => {
    const response = await send({ 'content-type': 'text/plain' }, request);
    assert.equal(response.status, 415);
    assert.match(
      ((await response.json()) as Json).error.message,
      /content-type: application\/json/,
    );
  });

  test('a Host that is not this server is refused (DNS rebinding)', async () => {
    const { port } = new URL(hardened.url);
    const status = await new Promise<number>((resolve, reject) => {
      const outgoing = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { host: 'attacker.example', 'content-type': 'application/json' },
        },
        (incoming) => {
          incoming.resume();
          resolve(incoming.statusCode ?? 0);
        },
      );
      outgoing.on('error', reject);
      outgoing.end(JSON.stringify(request));
    });
    assert.equal(status, 421);
  });

  test('tools, tool_choice and response_format are refused by name, not ignored', async () => {
    for (const field of ['tools', 'tool_choice', 'response_format']) {
      const response = await send(
        { 'content-type': 'application/json' },
        { ...request, [field]: [] },
      );
      assert.equal(response.status, 400, field);
      assert.equal(((await response.json()) as Json).error.param, field);
    }
  });

  test('max_tokens past the model context is a 400 naming the limit', async () => {
    const response = await send(
      { 'content-type': 'application/json' },
      { ...request, max_tokens: 1_000_000_000 },
    );
    assert.equal(response.status, 400);
    const body = (await response.json()) as Json;
    assert.equal(body.error.param, 'max_tokens');
    assert.match(body.error.message, /has room for \d+ \(context \d+\); ask for at most \d+/);
  });

  test('a request whose body dribbles in slowly is cut off at the request timeout', async () => {
    const slow = await startServer({
      endpoints: [
        modelEndpoint({ id: 'echo', model: plain, tokenizer: char, promptFormat: 'plain' }),
      ],
      port: 0,
      headersTimeoutMs: 200,
      requestTimeoutMs: 400,
    });
    try {
      const { port } = new URL(slow.url);
      const socket = connect(Number(port), '127.0.0.1');
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{`,
      );
      const started = Date.now();
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      await new Promise((resolve) => socket.on('close', resolve));
      assert.match(answer, /^HTTP\/1\.1 408/);
      assert.ok(Date.now() - started < 5_000, 'closed by the server, not by the test');
    } finally {
      await slow.close();
    }
  });

  test('n samples come back as n choices, each reproducible from seed + its index', async () => {
    const body = { ...request, n: 3, seed: 7, max_tokens: 4 };
    const response = await send({ 'content-type': 'application/json' }, body);
    assert.equal(response.status, 200);
    const group = (await response.json()) as Json;
    assert.deepEqual(
      group.choices.map((choice: Json) => choice.index),
      [0, 1, 2],
    );
    const single = async (seed: number) =>
      (
        (await (
          await send({ 'content-type': 'application/json' }, { ...request, seed, max_tokens: 4 })
        ).json()) as Json
      ).choices[0].message.content;
    assert.equal(group.choices[2].message.content, await single(9));
    const tokens = group.usage.completion_tokens;
    assert.ok(tokens >= 3 && tokens <= 12);
  });

  test('CORS is off by default and opt-in with an origin', async () => {
    const closed = await fetch(`${hardened.url}/v1/models`, {
      headers: { origin: 'http://page.example' },
    });
    assert.equal(closed.headers.get('access-control-allow-origin'), null);
    const open = await startServer({
      endpoints: [
        modelEndpoint({ id: 'echo', model: plain, tokenizer: char, promptFormat: 'plain' }),
      ],
      port: 0,
      corsOrigin: 'http://localhost:3000',
    });
    try {
      const preflight = await fetch(`${open.url}/v1/chat/completions`, { method: 'OPTIONS' });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), 'http://localhost:3000');
      assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /content-type/);
      const listed = await fetch(`${open.url}/v1/models`);
      assert.equal(listed.headers.get('access-control-allow-origin'), 'http://localhost:3000');
    } finally {
      await open.close();
    }
  });

  test('GET /v1/models/{id} describes a served model, 404 for others', async () => {
    const found = await fetch(`${hardened.url}/v1/models/echo`);
    assert.equal(found.status, 200);
    assert.deepEqual(await found.json(), {
      id: 'echo',
      object: 'model',
      created: 0,
      owned_by: 'teamtr',
    });
    const missing = await fetch(`${hardened.url}/v1/models/nothing`);
    assert.equal(missing.status, 404);
  });

  test('a streamed request that fails before its first token gets its HTTP status, not a 200 stream', async () => {
    const response = await send(
      { 'content-type': 'application/json' },
      { ...request, stream: true, messages: [{ role: 'user', content: 'x'.repeat(500) }] },
    );
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as Json).error.code, 'context_length_exceeded');
  });

  test('a port in use and an impossible port are clear errors', async () => {
    const port = Number(new URL(hardened.url).port);
    await assert.rejects(
      startServer({
        endpoints: [
          modelEndpoint({ id: 'echo', model: plain, tokenizer: char, promptFormat: 'plain' }),
        ],
        port,
      }),
      /port \d+ on 127\.0\.0\.1 is in use by another program; pick another with --port/,
    );
    await assert.rejects(
      startServer({
        endpoints: [
          modelEndpoint({ id: 'echo', model: plain, tokenizer: char, promptFormat: 'plain' }),
        ],
        port: 99999,
      }),
      /--port 99999 is not a port; give 0–65535/,
    );
  });
});
