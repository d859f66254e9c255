import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../util/errors.js';
import { availableBackends, getBackend, setBackend } from './index.js';
import { createTypeScriptBackend } from './typescript.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Runs a fresh process that selects a backend, so environment variables take effect. */
function selectInChild(environment: Record<string, string>): {
  stdout: string;
  stderr: string;
  status: number | null;
} {
  const script =
    "import('./src/backend/index.ts').then((m) => { try { console.log(m.getBackend().name); " +
    "console.log(m.getBackend().name); } catch (error) { console.log(error.name + ': ' + error.message); } })";
  const environmentWithoutQuiet = { ...process.env };
  delete environmentWithoutQuiet.TEAMTR_QUIET_BACKEND;
  delete environmentWithoutQuiet.TEAMTR_BACKEND;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: root,
    env: { ...environmentWithoutQuiet, ...environment },
    encoding: 'utf8',
  });
  return { stdout: result.stdout, stderr: result.stderr, status: result.status };
}

const MISSING_ADDON = { TEAMTR_NATIVE_ADDON: path.join(root, 'build', 'no-such-addon.node') };

describe('backend selection', () => {
  test('setBackend by name, by implementation, and unknown names', () => {
    const previous = getBackend();
    try {
      assert.equal(setBackend('typescript').name, 'typescript');
      assert.equal(getBackend().name, 'typescript');
      const custom = { ...createTypeScriptBackend(), name: 'custom' };
      assert.equal(setBackend(custom), custom);
      assert.equal(getBackend(), custom);
      assert.throws(
        () => setBackend('cuda' as 'auto'),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.message, /unknown backend "cuda" \(valid: auto, native, typescript\)/);
          return true;
        },
      );
    } finally {
      setBackend(previous);
    }
    assert.ok(availableBackends().includes('typescript'));
  });

  test('TEAMTR_BACKEND=typescript selects the reference backend without a warning', () => {
    const result = selectInChild({ TEAMTR_BACKEND: 'typescript' });
    assert.equal(result.stdout, 'typescript\ntypescript\n');
    assert.equal(result.stderr, '');
  });

  test('auto without the addon falls back to TypeScript with exactly one warning', () => {
    const result = selectInChild({ ...MISSING_ADDON });
    assert.equal(result.stdout, 'typescript\ntypescript\n');
    const lines = result.stderr.trim().split('\n');
    assert.equal(lines.length, 1, result.stderr);
    assert.match(lines[0], /not built.*TypeScript.*npm rebuild/);
  });

  test('TEAMTR_QUIET_BACKEND=1 silences the fallback warning', () => {
    const result = selectInChild({ ...MISSING_ADDON, TEAMTR_QUIET_BACKEND: '1' });
    assert.equal(result.stdout, 'typescript\ntypescript\n');
    assert.equal(result.stderr, '');
  });

  test('native requested but missing is an error that says how to build it', () => {
    const result = selectInChild({ ...MISSING_ADDON, TEAMTR_BACKEND: 'native' });
    assert.match(result.stdout, /^TeamtrError: The native backend was requested but .*npm rebuild/);
  });

  test('an addon built from other kernel signatures is refused, not called with misplaced arguments', () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-stale-addon-'));
    try {
      // A stand-in for an old build: loads like the addon, reports another fingerprint.
      const stale = path.join(directory, 'stale-addon.cjs');
      writeFileSync(
        stale,
        'module.exports = { info: () => ({ blas: "none", blasVersion: "", sgemm: "own", ' +
          'vectorWidth: 8, threads: 1, signatures: "0000000000000000" }), setThreads() {} };',
      );
      const result = selectInChild({ TEAMTR_NATIVE_ADDON: stale, TEAMTR_BACKEND: 'native' });
      assert.match(result.stdout, /built from other kernel signatures.*rebuild it/);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  test('an unknown TEAMTR_BACKEND lists the valid choices', () => {
    const result = selectInChild({ TEAMTR_BACKEND: 'gpu' });
    assert.match(
      result.stdout,
      /^ConfigError: TEAMTR_BACKEND: unknown backend "gpu" \(valid: auto, native, typescript\)/,
    );
  });
});
