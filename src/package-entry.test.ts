import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const project = mkdtempSync(path.join(os.tmpdir(), 'teamtr-consumer-'));
after(() => rmSync(project, { recursive: true, force: true }));

describe('the package as a dependency', () => {
  test('a CommonJS project can require it, and an ES module import it', () => {
    assert.ok(existsSync(path.join(root, 'dist', 'index.js')), 'npm run build first (npm ci does)');
    mkdirSync(path.join(project, 'node_modules'));
    symlinkSync(root, path.join(project, 'node_modules', 'teamtr'), 'dir');
    writeFileSync(path.join(project, 'package.json'), '{"name":"consumer","type":"commonjs"}');
    writeFileSync(
      path.join(project, 'use.cjs'),
      "const teamtr = require('teamtr'); console.log([typeof teamtr.train, typeof teamtr.defineTask].join(' '));",
    );
    writeFileSync(
      path.join(project, 'use.mjs'),
      "import { train, openRun } from 'teamtr'; console.log([typeof train, typeof openRun].join(' '));",
    );
    const run = (file: string) =>
      execFileSync(process.execPath, [file], { cwd: project, encoding: 'utf8' }).trim();
    assert.equal(run('use.cjs'), 'function function');
    assert.equal(run('use.mjs'), 'function function');
  });
});
