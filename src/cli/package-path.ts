import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A file shipped in the package (configs/demo.yaml, bench/torch_reference.py), from this file's
 * place: src/cli/ and dist/cli/ are both two levels below the package root.
 */
export function packagePath(...segments: string[]): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', ...segments);
}

/** This package's version, from its package.json (what `teamtr --version` prints). */
export function teamtrVersion(): string {
  const manifest = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as {
    version?: unknown;
  };
  return typeof manifest.version === 'string' ? manifest.version : 'unknown';
}
