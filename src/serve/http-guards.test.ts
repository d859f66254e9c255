import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startDashboard } from '../dashboard/server.js';
import { writeHuggingFaceFixture } from '../models/test-support/huggingface-fixture.js';
import { writeSyntheticRun } from '../report/test-support/synthetic-run.js';
import { modelEndpoint } from './endpoints.js';
import { startServer } from './server.js';
import { charModel, charTokenizer } from './test-support/char-team.js';
import { LocalTinkerEngine } from './tinker/local-engine.js';
import { startTinkerService } from './tinker/server.js';

/**
 * One suite of guards that every teamtr HTTP server must pass (hono's shape: one interface,
 * several implementations, one shared test): the OpenAI-compatible server, the Tinker server
 * and the dashboard. Each is bound to loopback, so only its own Host names are answered.
 */
const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-http-guards-'));
const servers: Array<{
  name: string;
  url: string;
  port: number;
  path: string;
  close(): Promise<void>;
}> = [];

before(async () => {
  writeHuggingFaceFixture(path.join(root, 'qwen'), { modelType: 'qwen2' });
  const openAi = await startServer({
    port: 0,
    endpoints: [
      modelEndpoint({
        id: 'plain',
        model: charModel(1),
        tokenizer: charTokenizer,
        promptFormat: 'plain',
      }),
    ],
  });
  servers.push({ name: 'OpenAI server', ...openAi, path: '/v1/models' });
  const tinker = await startTinkerService({
    engine: new LocalTinkerEngine('qwen', path.join(root, 'qwen')),
    port: 0,
  });
  servers.push({ name: 'Tinker server', ...tinker, path: '/api/v1/healthz' });
  await writeSyntheticRun(path.join(root, 'run'), { seed: 0 });
  const dashboard = await startDashboard({ runDirectories: [path.join(root, 'run')], port: 0 });
  servers.push({
    name: 'dashboard',
    url: dashboard.url.replace(/\/$/, ''),
    port: dashboard.port,
    close: dashboard.close,
    path: '/api/runs',
  });
});

after(async () => {
  for (const server of servers) await server.close();
  rmSync(root, { recursive: true, force: true });
});

/** Sends `lines` as the request head (and `body`), then the status line's code. */
function raw(port: number, lines: string[], body = ''): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1] ?? 0)));
    socket.on('error', reject);
    socket.write(`${lines.join('\r\n')}\r\nConnection: close\r\n\r\n${body}`);
  });
}

describe('the HTTP guards every teamtr server shares', () => {
  test('its own Host is answered; another or an empty Host is 421; two Hosts are 400', async () => {
    for (const server of servers) {
      const own = `Host: 127.0.0.1:${server.port}`;
      const get = `GET ${server.path} HTTP/1.1`;
      assert.equal(await raw(server.port, [get, own]), 200, server.name);
      assert.equal(await raw(server.port, [get, 'Host: evil.example']), 421, server.name);
      assert.equal(await raw(server.port, [get, 'Host: ']), 421, `${server.name}: empty Host`);
      assert.equal(await raw(server.port, [get, own, own]), 400, `${server.name}: two Hosts`);
    }
  });

  test('a client that goes away mid-body leaves no stack trace in the server log', async () => {
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      for (const [server, route] of [
        [servers[0]!, '/v1/chat/completions'],
        [servers[1]!, '/api/v1/create_session'],
      ] as const) {
        await new Promise<void>((resolve) => {
          const socket = connect(server.port, '127.0.0.1', () => {
            socket.write(
              `POST ${route} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`,
            );
            setTimeout(() => {
              socket.destroy();
              resolve();
            }, 100);
          });
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      process.stderr.write = write;
    }
    assert.deepEqual(
      written.filter((line) => /Error|\bat /.test(line)),
      [],
    );
  });
});

describe('the OpenAI server refuses what it would otherwise ignore', () => {
  test('a misspelled parameter and an unknown role are 400s naming them', async () => {
    const openAi = servers[0]!;
    const post = async (body: unknown) => {
      const response = await fetch(`${openAi.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return {
        status: response.status,
        error: ((await response.json()) as { error: { message: string; param: string } }).error,
      };
    };
    const messages = [{ role: 'user', content: 'hi' }];
    const misspelled = await post({ model: 'plain', messages, max_token: 3 });
    assert.equal(misspelled.status, 400);
    assert.equal(misspelled.error.param, 'max_token');
    assert.match(misspelled.error.message, /unknown parameter "max_token"/);
    const wizard = await post({ model: 'plain', messages: [{ role: 'wizard', content: 'hi' }] });
    assert.equal(wizard.status, 400);
    assert.equal(wizard.error.param, 'messages.0.role');
    assert.match(wizard.error.message, /"system"|system/);
  });
});
