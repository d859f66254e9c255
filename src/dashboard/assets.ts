import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { readBoundedFile } from '../util/bounded-file.js';
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

/** Where the asset files are: uplot's dist/ folder and the bundled browser script. */
export interface AssetFiles {
  /** The installed uplot package's dist/ folder. */
  uplotDirectory: string;
  /** The browser script the build writes, or null to bundle it from the source (tsx). */
  builtScript: string | null;
}

/**
 * The most an asset file may be: the dashboard's own files are well under 1 MiB (uPlot's
 * script 51 KB, the bundled client under 100 KB), so a file past this is not one of them.
 */
const assetLimit = {
  bytes: 4 * 2 ** 20,
  hint: "the dashboard's own files are well under it",
};

/**
 * Reads an asset through the bounded reader (a regular file, under assetLimit): a file swapped
 * for a device, a pipe or something huge is refused with what to do, never streamed.
 */
async function readAsset(file: string, what: string, remedy: string): Promise<Buffer> {
  try {
    return await readBoundedFile(file, { limit: assetLimit, what });
  } catch (error) {
    if (!(error instanceof TeamtrError)) throw error;
    throw new TeamtrError(`${what} cannot be served: ${error.message}; ${remedy}`);
  }
}

/** A file of the installed uplot package. */
function uplotFile(files: AssetFiles, name: string): () => Promise<Buffer> {
  return () =>
    readAsset(
      path.join(files.uplotDirectory, name),
      `uPlot's ${name}`,
      "reinstall teamtr's dependencies (npm ci)",
    );
}

/** The browser script served as /assets/dashboard.js (read or bundled once per table). */
function scriptOf(files: AssetFiles): () => Promise<string> {
  let script: Promise<string> | null = null;
  const load = async (): Promise<string> => {
    if (files.builtScript === null)
      return (await import('./client-bundle.js')).bundleDashboardClient();
    const bytes = await readAsset(
      files.builtScript,
      "the dashboard's browser script",
      'run `npm run build`',
    );
    return bytes.toString('utf8');
  };
  return () => {
    script ??= load().catch((error: unknown) => {
      script = null;
      throw error;
    });
    return script;
  };
}

/** The assets the page loads, read from `files`. The client names one; it never gives a path. */
export function assetsFrom(files: AssetFiles): Readonly<Record<string, Asset>> {
  return {
    'uPlot.iife.min.js': {
      contentType: 'text/javascript; charset=utf-8',
      body: uplotFile(files, 'uPlot.iife.min.js'),
    },
    'uPlot.min.css': {
      contentType: 'text/css; charset=utf-8',
      body: uplotFile(files, 'uPlot.min.css'),
    },
    'dashboard.js': { contentType: 'text/javascript; charset=utf-8', body: scriptOf(files) },
    'dashboard.css': { contentType: 'text/css; charset=utf-8', body: async () => dashboardStyles },
  };
}

export const assets = assetsFrom({
  // wherever npm put it (also when teamtr is a dependency)
  uplotDirectory: path.dirname(require.resolve('uplot/dist/uPlot.min.css')),
  // dist/dashboard/client/dashboard.js, next to this module once built; from the TypeScript
  // source (tsx) there is no build output to read.
  builtScript: import.meta.url.endsWith('.ts')
    ? null
    : fileURLToPath(new URL('./client/dashboard.js', import.meta.url)),
});

/** The browser script served as /assets/dashboard.js. */
export function dashboardScript(): Promise<string> {
  return assets['dashboard.js']!.body() as Promise<string>;
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
