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
    // What the CLI's serve, dashboard, report and export commands run is public API too.
    writeFileSync(
      path.join(project, 'applications.mjs'),
      "import * as teamtr from 'teamtr'; console.log(['startServer', 'modelEndpoint', 'teamEndpoint', " +
        "'startDashboard', 'writeReport', 'exportHuggingFaceModel'].map((name) => typeof teamtr[name]).join(' '));",
    );
    const run = (file: string) =>
      execFileSync(process.execPath, [file], { cwd: project, encoding: 'utf8' }).trim();
    assert.equal(run('use.cjs'), 'function function');
    assert.equal(run('use.mjs'), 'function function');
    assert.equal(run('applications.mjs'), Array(6).fill('function').join(' '));
  });
});

describe('the packed package', () => {
  test('ships the built-in models, configs and docs, and no test code', () => {
    const [report] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    ) as Array<{ files: Array<{ path: string }> }>;
    const files = report!.files.map((file) => file.path);
    for (const needed of [
      'models/arithmetic-chain/role-0/model.safetensors',
      'models/arithmetic-chain/shared/tokenizer.json',
      'configs/demo.yaml',
      'docs/method.md',
      'dist/index.js',
      'bin/teamtr.js',
    ])
      assert.ok(files.includes(needed), `${needed} is packed`);
    const testCode = files.filter((file) =>
      /\.test\.|test-support|backend\/testing|backend\.suite/.test(file),
    );
    assert.deepEqual(testCode, []);
  });
});
