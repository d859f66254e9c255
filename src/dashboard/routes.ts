import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { configTable } from '../report/config-table.js';
import { runColors } from '../report/figure-data.js';
import { buildFigures } from '../report/figures.js';
import { describeRun } from '../report/run-overview.js';
import { assets, contentTypeOf, dashboardPage } from './assets.js';
import { RunStore } from './run-store.js';
import { decodePathSegments } from './safe-path.js';

/**
 * The dashboard's HTTP API. GET only; run ids are positions ("0", "1", …) in the list of runs
 * the dashboard was started with, never paths; every file read stays inside its run directory.
 *
 *     GET /                                  the page
 *     GET /assets/<name>                     its script, styles and uPlot
 *     GET /api/runs                          the runs at a glance (status, progress, key numbers)
 *     GET /api/overview                      runs, figures, config table: what the page draws
 *     GET /api/runs/<id>/metrics?since=<n>   records appended after byte n, and the next n
 *     GET /api/runs/<id>/config              config.json
 *     GET /api/runs/<id>/summary             summary.json (404 while the run has none)
 *     GET /api/runs/<id>/files/<path>        any regular file inside the run directory
 */

export interface RouteContext {
  store: RunStore;
  pollIntervalMs: number;
  /** Host header values accepted (guards a loopback server against DNS rebinding); null = any. */
  allowedHosts: ReadonlySet<string> | null;
}

const securityHeaders = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const pagePolicy =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";
/** Files from run directories are data: a served HTML file must not run scripts on our origin. */
const filePolicy = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'";

function send(
  response: ServerResponse,
  status: number,
  contentType: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
): void {
  response.writeHead(status, {
    ...securityHeaders,
    'content-type': contentType,
    'content-length': String(Buffer.byteLength(body)),
    ...extra,
  });
  response.end(body);
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

function sendError(response: ServerResponse, status: number, message: string): void {
  sendJson(response, status, { error: message });
}

export async function handleRequest(
  request: IncomingMessage,
  response: ServerResponse,
  context: RouteContext,
): Promise<void> {
  if (request.method !== 'GET') {
    send(
      response,
      405,
      'application/json; charset=utf-8',
      JSON.stringify({ error: 'the dashboard is read-only: only GET is allowed' }),
      { allow: 'GET' },
    );
    return;
  }
  if (
    context.allowedHosts &&
    !context.allowedHosts.has((request.headers.host ?? '').toLowerCase())
  ) {
    sendError(
      response,
      421,
      'unexpected Host header; open the dashboard through the URL it printed',
    );
    return;
  }
  const url = request.url ?? '/';
  const queryStart = url.indexOf('?');
  const decoded = decodePathSegments(queryStart < 0 ? url : url.slice(0, queryStart));
  if (!decoded.ok) {
    sendError(response, 403, `refused: ${decoded.reason}`);
    return;
  }
  const query = new URLSearchParams(queryStart < 0 ? '' : url.slice(queryStart + 1));
  await route(decoded.segments, query, response, context);
}

async function route(
  segments: string[],
  query: URLSearchParams,
  response: ServerResponse,
  context: RouteContext,
): Promise<void> {
  const [first, second, id, resource, ...rest] = segments;
  if (segments.length === 0) {
    send(response, 200, 'text/html; charset=utf-8', dashboardPage, {
      'content-security-policy': pagePolicy,
    });
    return;
  }
  if (first === 'assets' && second !== undefined && segments.length === 2) {
    const asset = Object.hasOwn(assets, second) ? assets[second] : undefined;
    if (!asset) return sendError(response, 404, `no asset "${second}"`);
    send(response, 200, asset.contentType, await asset.body());
    return;
  }
  if (first !== 'api') return sendError(response, 404, 'not found; the API lives under /api');
  await context.store.refresh();
  if (second === 'runs' && segments.length === 2)
    return sendJson(response, 200, context.store.runs.map(describeRun));
  if (second === 'overview' && segments.length === 2)
    return sendJson(response, 200, overview(context));
  if (second !== 'runs' || id === undefined || resource === undefined)
    return sendError(response, 404, 'not found; see GET /api/runs');
  const run = context.store.run(id);
  if (!run)
    return sendError(
      response,
      404,
      `no run "${id}"; GET /api/runs lists the runs (ids 0 to ${context.store.runs.length - 1})`,
    );
  if (resource === 'metrics' && rest.length === 0) {
    const since = query.get('since') ?? '0';
    if (!/^\d+$/.test(since))
      return sendError(
        response,
        400,
        'since must be a byte offset (a non-negative integer) from a previous response',
      );
    return sendJson(response, 200, await context.store.readMetrics(id, Number(since)));
  }
  if (resource === 'config' && rest.length === 0) return sendJson(response, 200, run.config);
  if (resource === 'summary' && rest.length === 0) {
    return run.summary
      ? sendJson(response, 200, run.summary)
      : sendError(
          response,
          404,
          'this run has no summary.json yet (it is written when the run ends)',
        );
  }
  if (resource === 'files' && rest.length > 0) return sendRunFile(id, rest, response, context);
  sendError(response, 404, 'not found; see GET /api/runs');
}

function overview(context: RouteContext): unknown {
  const runs = context.store.runs;
  const recent = runs.flatMap((run) =>
    run.records.slice(-12).map((record) => ({ runId: run.id, run: run.label, record })),
  );
  recent.sort((a, b) => a.record.generatedTokens - b.record.generatedTokens);
  return {
    runs: runs.map(describeRun),
    runColors: Object.fromEntries(runColors(runs)),
    figures: buildFigures(runs),
    config: configTable(runs.map((run) => run.config)),
    offsets: context.store.offsets(),
    recent: recent.slice(-12),
    pollIntervalMs: context.pollIntervalMs,
  };
}

async function sendRunFile(
  id: string,
  segments: string[],
  response: ServerResponse,
  context: RouteContext,
): Promise<void> {
  const file = await context.store.file(id, segments);
  if (!file || file.kind === 'missing')
    return sendError(response, 404, `run ${id} has no file ${segments.join('/')}`);
  if (file.kind === 'refused')
    return sendError(response, 403, `refused: ${segments.join('/')} is ${file.reason}`);
  response.writeHead(200, {
    ...securityHeaders,
    'content-type': contentTypeOf(file.path),
    'content-length': String(file.size),
    'content-security-policy': filePolicy,
  });
  if (file.size === 0) {
    response.end();
    return;
  }
  // Exactly the bytes stat counted, even if the file grows meanwhile (metrics.jsonl does).
  await new Promise<void>((resolve, reject) => {
    const stream = createReadStream(file.path, { start: 0, end: Math.max(0, file.size - 1) });
    stream.on('error', reject);
    stream.on('end', resolve);
    stream.pipe(response);
  });
}
