import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * Bundles the dashboard's browser code (src/dashboard/client/, TypeScript with DOM types) into
 * one script for /assets/dashboard.js. `npm run build` writes it into dist/ (assets.ts serves
 * that file); running from source (tests under tsx) bundles it in memory on first request.
 * esbuild is a development dependency: nothing imports this module in an installed package.
 */

/** src/dashboard/client/main.ts, from this module in src/dashboard or in dist/dashboard. */
const entry = fileURLToPath(new URL('../../src/dashboard/client/main.ts', import.meta.url));

/** The bundle's text: one IIFE (the page loads uPlot's own IIFE before it). */
export async function bundleDashboardClient(): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'iife',
    target: 'es2020',
    charset: 'utf8',
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

/** Writes the bundle to `file` (the build's dist/dashboard/client/dashboard.js). */
export async function writeDashboardClient(file: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, await bundleDashboardClient());
}
