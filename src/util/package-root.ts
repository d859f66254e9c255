import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readBoundedTextSync } from './bounded-file.js';

/**
 * A file shipped in the package (package.json, configs/demo.yaml, bench/torch_reference.py),
 * from this file's place: src/util/ and dist/util/ are both two levels below the package root.
 */
export function packagePath(...segments: string[]): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', ...segments);
}

let version: string | undefined;

/**
 * This package's version, from its package.json: what `teamtr --version` prints and what a
 * run directory records of the teamtr that created it.
 */
export function teamtrVersion(): string {
  version ??= readVersion();
  return version;
}

function readVersion(): string {
  const manifestPath = packagePath('package.json');
  const text = readBoundedTextSync(manifestPath, {
    limit: 'jsonBytes',
    what: 'teamtr’s package.json',
  });
  const manifest = JSON.parse(text) as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}
