import assert from 'node:assert/strict';
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import vm from 'node:vm';
import { figureIds } from '../report/figures.js';
import { syntheticRecords, writeSyntheticRun } from '../report/test-support/synthetic-run.js';
import { dashboardScript } from './assets.js';
import { startDashboard, type DashboardServer } from './server.js';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Sends `rawPath` exactly as given (no client-side normalization of "..", unlike fetch). */
function send(
  server: DashboardServer,
  rawPath: string,
  options: { method?: string; host?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port: server.port,
        path: rawPath,
        method: options.method ?? 'GET',
        headers: options.host ? { host: options.host } : {},
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
        );
      },
    );
    request.on('error', reject);
    request.end();
  });
}

async function json<T>(server: DashboardServer, rawPath: string): Promise<T> {
  const reply = await send(server, rawPath);
  assert.equal(reply.status, 200, `${rawPath}: ${reply.body}`);
  return JSON.parse(reply.body) as T;
}

interface MetricsReply {
  records: Array<{ type: string; stage: number }>;
  nextOffset: number;
  reset: boolean;
}

describe('dashboard server', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-dashboard-'));
  const compare = path.join(scratch, 'compare');
  const finished = path.join(compare, 'teamtr-seed0');
  const running = path.join(compare, 'teamtr-seed1');
  let server: DashboardServer;

  before(async () => {
    await writeSyntheticRun(finished, { seed: 0 });
    await writeSyntheticRun(running, { seed: 1, running: true });
    writeFileSync(path.join(scratch, 'secret.txt'), 'not for the dashboard');
    symlinkSync(path.join(scratch, 'secret.txt'), path.join(finished, 'escape.txt'));
    mkdirSync(path.join(finished, 'figures'));
    server = await startDashboard({ runDirectories: [compare], port: 0, pollIntervalMs: 250 });
  });

  after(async () => {
    await server?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  test('listens on loopback and lists the runs by id, never by a path from the client', async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const runs = await json<Array<{ id: string; label: string; status: string }>>(
      server,
      '/api/runs',
    );
    assert.deepEqual(
      runs.map((run) => [run.id, run.label, run.status]),
      [
        ['0', 'teamtr-seed0', 'finished'],
        ['1', 'teamtr-seed1', 'running'],
      ],
    );
    assert.equal((await send(server, '/api/runs/2/config')).status, 404);
    assert.equal((await send(server, '/api/runs/first/config')).status, 404);
  });

  test('an impossible or busy port is a clear error naming --port', async () => {
    await assert.rejects(
      startDashboard({ runDirectories: [compare], port: 99999 }),
      /--port 99999 is not a port; give 0–65535/,
    );
    await assert.rejects(
      startDashboard({ runDirectories: [compare], port: server.port }),
      new RegExp(`port ${server.port} is in use; pick another with --port`),
    );
  });

  test('is read-only: anything but GET is 405', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const reply = await send(server, '/api/runs', { method });
      assert.equal(reply.status, 405, method);
      assert.equal(reply.headers.allow, 'GET');
    }
  });

  test('refuses path traversal, encoded or not, and links out of the run directory', async () => {
    for (const rawPath of [
      '/api/runs/0/files/../../secret.txt',
      '/api/runs/0/files/..%2f..%2fsecret.txt',
      '/api/runs/0/files/%2e%2e/%2e%2e/secret.txt',
      '/assets/..%2F..%2Fpackage.json',
      '/api/runs/0/files/escape.txt',
      '/..',
    ]) {
      const reply = await send(server, rawPath);
      assert.equal(reply.status, 403, rawPath);
      assert.ok(!reply.body.includes('not for the dashboard'), rawPath);
    }
    assert.equal((await send(server, '/api/runs/0/files/nothing-here.json')).status, 404);
    assert.equal(
      (await send(server, '/api/runs/0/files/figures')).status,
      403,
      'a directory is not a file',
    );
  });

  test('serves files inside a run, sandboxed', async () => {
    const reply = await send(server, '/api/runs/0/files/config.json');
    assert.equal(reply.status, 200);
    assert.equal(reply.body, readFileSync(path.join(finished, 'config.json'), 'utf8'));
    assert.match(String(reply.headers['content-security-policy']), /sandbox/);
  });

  test('refuses requests for another host name (DNS rebinding)', async () => {
    assert.equal((await send(server, '/api/runs', { host: 'attacker.example:80' })).status, 421);
    assert.equal(
      (await send(server, '/api/runs', { host: `localhost:${server.port}` })).status,
      200,
    );
  });

  test('metrics are incremental by byte offset; a half-written line waits for its newline', async () => {
    const metrics = path.join(running, 'metrics.jsonl');
    const all = await json<MetricsReply>(server, '/api/runs/1/metrics?since=0');
    assert.equal(all.records.length, syntheticRecords({ seed: 1 }).length);
    assert.equal(all.nextOffset, statSync(metrics).size);
    const line = JSON.stringify({ ...syntheticRecords({ seed: 1 }).at(-1), stage: 99 });
    appendFileSync(metrics, line.slice(0, 25));
    const half = await json<MetricsReply>(server, `/api/runs/1/metrics?since=${all.nextOffset}`);
    assert.deepEqual(
      [half.records.length, half.nextOffset, half.reset],
      [0, all.nextOffset, false],
    );
    appendFileSync(metrics, `${line.slice(25)}\n`);
    const whole = await json<MetricsReply>(server, `/api/runs/1/metrics?since=${half.nextOffset}`);
    assert.deepEqual(
      whole.records.map((record) => record.stage),
      [99],
    );
    assert.equal((await send(server, '/api/runs/1/metrics?since=-1')).status, 400);
    truncateSync(metrics, all.nextOffset);
    const afterTruncation = await json<MetricsReply>(
      server,
      `/api/runs/1/metrics?since=${whole.nextOffset}`,
    );
    assert.equal(afterTruncation.reset, true);
  });

  test('the overview carries every figure and follows a run as it ends', async () => {
    const before = await json<{
      runs: Array<{ status: string }>;
      figures: Array<{ id: string }>;
      offsets: Record<string, number>;
      pollIntervalMs: number;
    }>(server, '/api/overview');
    assert.deepEqual(
      before.figures.map((figure) => figure.id),
      [...figureIds],
    );
    assert.equal(before.runs[1]!.status, 'running');
    assert.equal(before.offsets['0'], statSync(path.join(finished, 'metrics.jsonl')).size);
    assert.equal(before.pollIntervalMs, 250);
    assert.equal((await send(server, '/api/runs/1/summary')).status, 404);
    writeFileSync(path.join(running, 'summary.json'), JSON.stringify({ interrupted: true }));
    const after = await json<{ runs: Array<{ status: string }> }>(server, '/api/overview');
    assert.equal(after.runs[1]!.status, 'interrupted');
    assert.deepEqual(await json(server, '/api/runs/1/summary'), { interrupted: true });
  });

  test('serves the page and its assets (uPlot from the installed package) itself', async () => {
    const page = await send(server, '/');
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-security-policy']), /script-src 'self'/);
    assert.ok(page.body.includes('<script src="/assets/uPlot.iife.min.js">'));
    const uplot = await send(server, '/assets/uPlot.iife.min.js');
    assert.equal(uplot.status, 200);
    assert.match(uplot.body, /uPlot/);
    assert.equal((await send(server, '/assets/uPlot.min.css')).status, 200);
    assert.equal((await send(server, '/assets/dashboard.js')).body, await dashboardScript());
    assert.equal((await send(server, '/assets/constructor')).status, 404);
    assert.equal((await send(server, '/nowhere')).status, 404);
  });

  test('the browser script compiles', async () => {
    const script = await dashboardScript();
    assert.doesNotThrow(() => new vm.Script(script, { filename: 'dashboard.js' }));
  });
});

describe('startDashboard arguments', () => {
  test('an explicit port that is taken is an error that says what to do', async () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-dashboard-port-'));
    const first = await (async () => {
      await writeSyntheticRun(path.join(scratch, 'run'), { stages: 1 });
      return startDashboard({ runDirectories: [path.join(scratch, 'run')], port: 0 });
    })();
    try {
      await assert.rejects(
        startDashboard({ runDirectories: [path.join(scratch, 'run')], port: first.port }),
        /port \d+ is in use; pick another with --port/,
      );
    } finally {
      await first.close();
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

describe('a run whose files link out of it', () => {
  test('is shown without those files, and they are refused when asked for', async () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-dashboard-links-'));
    const good = path.join(scratch, 'runs', 'good');
    const linked = path.join(scratch, 'runs', 'linked');
    await writeSyntheticRun(good, { stages: 1 });
    const { run } = await writeSyntheticRun(linked, { stages: 1 });
    writeFileSync(path.join(scratch, 'elsewhere.jsonl'), readFileSync(run.metricsPath));
    rmSync(run.metricsPath);
    symlinkSync(path.join(scratch, 'elsewhere.jsonl'), run.metricsPath);
    const server = await startDashboard({ runDirectories: [path.join(scratch, 'runs')], port: 0 });
    try {
      const runs = await json<Array<{ label: string; records: number }>>(server, '/api/runs');
      assert.deepEqual(
        runs.map((entry) => [entry.label, entry.records > 0]),
        [
          ['good', true],
          ['linked', false],
        ],
      );
      assert.equal((await send(server, '/api/runs/1/metrics?since=0')).status, 403);
      assert.equal((await send(server, '/api/runs/1/files/metrics.jsonl')).status, 403);
      assert.equal((await send(server, '/api/overview')).status, 200);
    } finally {
      await server.close();
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
