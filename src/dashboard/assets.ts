import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { TeamtrError } from '../util/errors.js';
import { dashboardStyles } from './styles.js';

/**
 * The files the dashboard page loads, all served by the dashboard itself (it works offline):
 * the page, its script (src/dashboard/client/, bundled by the build) and styles, and uPlot from
 * the installed `uplot` package. The client names an asset; it never supplies a path.
 */

export interface Asset {
  contentType: string;
  body: () => Promise<string | Buffer>;
}

const require = createRequire(import.meta.url);

/** A file of the installed uplot package, wherever npm put it (also when teamtr is a dependency). */
function uplotFile(name: string): () => Promise<Buffer> {
  return () => readFile(require.resolve(`uplot/dist/${name}`));
}

/** dist/dashboard/client/dashboard.js, next to this module once built. */
const builtScript = fileURLToPath(new URL('./client/dashboard.js', import.meta.url));
/** Running from the TypeScript source (tsx): there is no build output to read. */
const fromSource = import.meta.url.endsWith('.ts');
let script: Promise<string> | null = null;

async function loadScript(): Promise<string> {
  if (fromSource) return (await import('./client-bundle.js')).bundleDashboardClient();
  try {
    return await readFile(builtScript, 'utf8');
  } catch {
    throw new TeamtrError(
      `the dashboard's browser script ${builtScript} is missing; run \`npm run build\``,
    );
  }
}

/** The browser script served as /assets/dashboard.js (read or bundled once). */
export function dashboardScript(): Promise<string> {
  script ??= loadScript().catch((error: unknown) => {
    script = null;
    throw error;
  });
  return script;
}

export const dashboardPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>TeamTR dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/uPlot.min.css">
<link rel="stylesheet" href="/assets/dashboard.css">
</head>
<body>
<header class="top">
  <div><h1>TeamTR dashboard</h1><p id="subtitle">loading runs…</p></div>
  <div id="live" class="live"><span class="dot"></span><span id="live-text">connecting…</span></div>
</header>
<main>
  <h2>Runs</h2>
  <div id="runs" class="cards"></div>
  <h2>Figures</h2>
  <div id="figures" class="grid"></div>
  <h2>Latest records</h2>
  <div id="feed"></div>
  <h2>Transcripts</h2>
  <div id="transcripts"></div>
  <h2>Configuration</h2>
  <div id="config"></div>
</main>
<script src="/assets/uPlot.iife.min.js"></script>
<script src="/assets/dashboard.js"></script>
</body>
</html>
`;

export const assets: Readonly<Record<string, Asset>> = {
  'uPlot.iife.min.js': {
    contentType: 'text/javascript; charset=utf-8',
    body: uplotFile('uPlot.iife.min.js'),
  },
  'uPlot.min.css': { contentType: 'text/css; charset=utf-8', body: uplotFile('uPlot.min.css') },
  'dashboard.js': {
    contentType: 'text/javascript; charset=utf-8',
    body: dashboardScript,
  },
  'dashboard.css': { contentType: 'text/css; charset=utf-8', body: async () => dashboardStyles },
};

/** Content types of run files a client may download (anything else is sent as octet-stream). */
export function contentTypeOf(fileName: string): string {
  const extension = fileName.slice(fileName.lastIndexOf('.') + 1).toLowerCase();
  const types: Record<string, string> = {
    json: 'application/json; charset=utf-8',
    jsonl: 'application/x-ndjson; charset=utf-8',
    html: 'text/html; charset=utf-8',
    svg: 'image/svg+xml',
    png: 'image/png',
    txt: 'text/plain; charset=utf-8',
    yaml: 'text/plain; charset=utf-8',
  };
  return types[extension] ?? 'application/octet-stream';
}
