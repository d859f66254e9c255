import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const workspace = mkdtempSync(path.join(os.tmpdir(), 'teamtr-install-'));
after(() => rmSync(workspace, { recursive: true, force: true }));

describe('npm i teamtr, in an empty project', () => {
  test(
    'the packed tarball installs, runs the demo there and can be required from CommonJS',
    { timeout: 300_000 },
    () => {
      const run = (command: string, args: string[], cwd: string) =>
        execFileSync(command, args, {
          cwd,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
          env: {
            ...process.env,
            TEAMTR_QUIET_BACKEND: '1',
            XDG_CACHE_HOME: path.join(workspace, 'cache'),
          },
        });
      const packed = JSON.parse(
        run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', workspace], root),
      ) as Array<{ filename: string }>;
      const tarball = path.join(workspace, packed[0]!.filename);
      const project = path.join(workspace, 'project');
      mkdirSync(project);
      writeFileSync(
        path.join(project, 'package.json'),
        '{"name":"consumer","version":"1.0.0","private":true}',
      );
      // The dependencies come from the npm cache `npm ci` filled; no download is needed.
      run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], project);
      const runDirectory = path.join(workspace, 'run');
      const summary = JSON.parse(
        run(
          'npx',
          [
            'teamtr',
            'demo',
            '--budget-generated-tokens',
            '2000',
            '--evaluation-problems',
            '20',
            '--run-dir',
            runDirectory,
            '--json',
          ],
          project,
        ),
      ) as { stages: number; evalAfter: { count: number } };
      assert.ok(summary.stages > 0);
      assert.equal(summary.evalAfter.count, 20);
      assert.ok(existsSync(path.join(runDirectory, 'checkpoint', 'state.json')));
      assert.equal(
        readFileSync(path.join(project, 'node_modules', 'teamtr', 'configs', 'demo.yaml'), 'utf8'),
        readFileSync(path.join(root, 'configs', 'demo.yaml'), 'utf8'),
      );
      writeFileSync(path.join(project, 'use.cjs'), "console.log(typeof require('teamtr').train);");
      assert.equal(run(process.execPath, ['use.cjs'], project).trim(), 'function');
    },
  );
});
