import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono } from 'hono';
import { createReadStream } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { HttpError, isClientGone } from '../http/errors.js';
import { hostGuard, type AppContext, type NodeEnvironment } from '../http/guards.js';
import { configTable } from '../report/config-table.js';
import { runColors } from '../report/figure-data.js';
import { buildFigures } from '../report/figures.js';
import { describeRun } from '../report/run-overview.js';
import { readTranscripts } from '../trainer/outputs/transcripts.js';
import { TeamtrError } from '../util/errors.js';
import { assets, contentTypeOf, dashboardPage } from './assets.js';
import { RunStore } from './run-store.js';
import { decodePathSegments } from './safe-path.js';

/**
 * The dashboard's HTTP API, a route table on hono. GET only; run ids are positions ("0", "1",
 * …) in the list of runs the dashboard was started with, never paths; every file read stays
 * inside its run directory (paths are decoded from the raw request line, before any
 * normalization, and a traversal is refused with 403).
 *
 *     GET /                                  the page
 *     GET /assets/<name>                     its script, styles and uPlot
 *     GET /api/runs                          the runs at a glance (status, progress, key numbers)
 *     GET /api/overview                      runs, figures, config table: what the page draws
 *     GET /api/runs/<id>/metrics?since=<n>   records appended after byte n, and the next n
 *     GET /api/runs/<id>/config              config.json
 *     GET /api/runs/<id>/summary             summary.json (404 while the run has none)
 *     GET /api/runs/<id>/transcripts?stage=<s>  a stage's transcripts (the latest by default)
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

function refuse(status: number, message: string): never {
  throw new HttpError(status, message);
}

function page(context: AppContext, status: number, contentType: string, body: string | Buffer) {
  return context.body(body as string, status as 200, {
    ...securityHeaders,
    'content-type': contentType,
  });
}

function json(context: AppContext, value: unknown): Response {
  return page(context, 200, 'application/json; charset=utf-8', JSON.stringify(value));
}

/** The path's segments, decoded from the raw request line (set by the guard below). */
function segmentsOf(context: AppContext): string[] {
  const url = context.env.incoming.url ?? '/';
  const queryStart = url.indexOf('?');
  const decoded = decodePathSegments(queryStart < 0 ? url : url.slice(0, queryStart));
  if (!decoded.ok) throw new HttpError(403, `refused: ${decoded.reason}`);
  return decoded.segments;
}

function runOf(context: AppContext, routeContext: RouteContext) {
  const id = context.req.param('id') ?? '';
  const run = routeContext.store.run(id);
  if (!run)
    refuse(
      404,
      `no run "${id}"; GET /api/runs lists the runs (ids 0 to ${routeContext.store.runs.length - 1})`,
    );
  return { id, run: run! };
}

async function metrics(c: AppContext, routeContext: RouteContext): Promise<Response> {
  await routeContext.store.refresh();
  const { id } = runOf(c, routeContext);
  const since = c.req.query('since') ?? '0';
  if (!/^\d+$/.test(since))
    refuse(400, 'since must be a byte offset (a non-negative integer) from a previous response');
  return json(c, await routeContext.store.readMetrics(id, Number(since)));
}

async function summary(c: AppContext, routeContext: RouteContext): Promise<Response> {
  await routeContext.store.refresh();
  const { run } = runOf(c, routeContext);
  if (!run.summary)
    refuse(404, 'this run has no summary.json yet (it is written when the run ends)');
  return json(c, run.summary);
}

/** The stages that have transcripts, and one stage's (the latest unless `stage` is given). */
async function transcripts(c: AppContext, routeContext: RouteContext): Promise<Response> {
  await routeContext.store.refresh();
  const { run } = runOf(c, routeContext);
  const asked = c.req.query('stage');
  if (asked !== undefined && !/^\d+$/.test(asked))
    refuse(400, 'stage must be a stage number (GET without it lists the stages)');
  const all = readTranscripts(run.directory);
  const stages = [...new Set(all.map((transcript) => transcript.stage))];
  const stage = asked === undefined ? (stages[stages.length - 1] ?? null) : Number(asked);
  return json(c, {
    stages,
    stage,
    transcripts: all.filter((transcript) => transcript.stage === stage),
  });
}

/** The routes: path and handler (every one GET). */
function routeTable(routeContext: RouteContext) {
  const refreshed = async () => routeContext.store.refresh();
  return [
    {
      path: '/',
      handle: (c: AppContext) => {
        c.header('content-security-policy', pagePolicy);
        return page(c, 200, 'text/html; charset=utf-8', dashboardPage);
      },
    },
    {
      path: '/assets/:name',
      handle: async (c: AppContext) => {
        const name = c.req.param('name') ?? '';
        const asset = Object.hasOwn(assets, name) ? assets[name] : undefined;
        if (!asset) return refuse(404, `no asset "${name}"`);
        return page(c, 200, asset.contentType, await asset.body());
      },
    },
    {
      path: '/api/runs',
      handle: async (c: AppContext) => {
        await refreshed();
        return json(c, routeContext.store.runs.map(describeRun));
      },
    },
    {
      path: '/api/overview',
      handle: async (c: AppContext) => {
        await refreshed();
        return json(c, overview(routeContext));
      },
    },
    { path: '/api/runs/:id/metrics', handle: (c: AppContext) => metrics(c, routeContext) },
    {
      path: '/api/runs/:id/config',
      handle: async (c: AppContext) => {
        await refreshed();
        return json(c, runOf(c, routeContext).run.config);
      },
    },
    { path: '/api/runs/:id/summary', handle: (c: AppContext) => summary(c, routeContext) },
    { path: '/api/runs/:id/transcripts', handle: (c: AppContext) => transcripts(c, routeContext) },
    {
      path: '/api/runs/:id/files/*',
      handle: async (c: AppContext) => {
        await refreshed();
        const { id } = runOf(c, routeContext);
        return sendRunFile(c, id, segmentsOf(c).slice(4), routeContext);
      },
    },
  ];
}

/** The dashboard as a hono app: read-only, Host-guarded, paths checked before routing. */
export function dashboardApp(routeContext: RouteContext, onError?: (error: unknown) => void) {
  const app = new Hono<NodeEnvironment>();
  app.use(async (context, next) => {
    if (context.req.method !== 'GET') {
      context.header('allow', 'GET');
      throw new HttpError(405, 'the dashboard is read-only: only GET is allowed');
    }
    await next();
  });
  app.use(
    hostGuard(() => routeContext.allowedHosts, 'open the dashboard through the URL it printed'),
  );
  app.use(async (context, next) => {
    segmentsOf(context);
    await next();
  });
  for (const route of routeTable(routeContext)) app.get(route.path, route.handle);
  app.notFound((context) =>
    refuse(
      404,
      context.req.path.startsWith('/api/')
        ? 'not found; see GET /api/runs'
        : 'not found; the API lives under /api',
    ),
  );
  app.onError((error, context) => {
    if (isClientGone(error)) return context.body(null, 499 as 200);
    if (!(error instanceof HttpError)) onError?.(error);
    const status =
      error instanceof HttpError ? error.status : error instanceof TeamtrError ? 403 : 500;
    const message =
      error instanceof TeamtrError
        ? error.message
        : 'internal error; see the terminal running `teamtr dashboard`';
    return context.body(JSON.stringify({ error: message }), status as 400, {
      ...securityHeaders,
      'content-type': 'application/json; charset=utf-8',
    });
  });
  return app;
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
  context: AppContext,
  id: string,
  segments: string[],
  routeContext: RouteContext,
): Promise<Response> {
  const file = await routeContext.store.file(id, segments);
  if (!file || file.kind === 'missing')
    return refuse(404, `run ${id} has no file ${segments.join('/')}`);
  if (file.kind === 'refused')
    return refuse(403, `refused: ${segments.join('/')} is ${file.reason}`);
  const response = context.env.outgoing as ServerResponse;
  response.writeHead(200, {
    ...securityHeaders,
    'content-type': contentTypeOf(file.path),
    'content-length': String(file.size),
    'content-security-policy': filePolicy,
  });
  if (file.size === 0) {
    response.end();
    return RESPONSE_ALREADY_SENT;
  }
  // Exactly the bytes stat counted, even if the file grows meanwhile (metrics.jsonl does).
  await new Promise<void>((resolve, reject) => {
    const stream = createReadStream(file.path, { start: 0, end: Math.max(0, file.size - 1) });
    stream.on('error', reject);
    stream.on('end', resolve);
    stream.pipe(response);
  });
  return RESPONSE_ALREADY_SENT;
}
