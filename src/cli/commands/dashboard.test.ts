import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { firstLine, startCli } from '../../report/test-support/cli-process.js';
import { writeSyntheticRun } from '../../report/test-support/synthetic-run.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-dashboard-cli-'));
const children: ChildProcess[] = [];

after(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

test('teamtr dashboard --json prints its URL, serves the runs, and stops cleanly on Ctrl-C', async () => {
  const run = path.join(scratch, 'compare', 'teamtr-seed0');
  await writeSyntheticRun(run, { stages: 2 });
  const cli = startCli(['dashboard', path.join(scratch, 'compare'), '--port', '0', '--json']);
  children.push(cli.child);
  const { child, output, exited } = cli;
  const started = JSON.parse(await firstLine(cli, 30)) as {
    url: string;
    host: string;
    runs: string[];
  };
  assert.equal(started.host, '127.0.0.1');
  assert.deepEqual(started.runs, [run]);
  const runs = (await (await fetch(`${started.url}api/runs`)).json()) as Array<{ label: string }>;
  assert.deepEqual(
    runs.map((entry) => entry.label),
    ['teamtr-seed0'],
  );
  child.kill('SIGINT');
  assert.equal(await exited, 0);
  assert.match(output.stderr, /stopped/);
  assert.equal(output.stdout.trim().split('\n').length, 1, '--json prints exactly one line');
});

test('teamtr dashboard rejects a bad --port before serving anything', async () => {
  await writeSyntheticRun(path.join(scratch, 'single'), { stages: 1 });
  const cli = startCli(['dashboard', path.join(scratch, 'single'), '--port', '70000']);
  children.push(cli.child);
  const { output, exited } = cli;
  assert.equal(await exited, 2);
  assert.match(output.stderr, /--port: "70000" is not an integer from 0 to 65535/);
});
