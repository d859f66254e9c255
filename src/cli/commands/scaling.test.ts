import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { ScalingReport } from '../../experiments/scaling-report.js';
import { runCli } from '../test-support/run-cli.js';

const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-scaling-'));
after(() => rmSync(directory, { recursive: true, force: true }));

test('teamtr scaling runs the grid on a task, writes paired tables and a result file, and reuses finished runs', async () => {
  const result = path.join(directory, 'result.json');
  const argv = [
    'scaling',
    '--task',
    'worked-chain',
    '--team-sizes',
    '2,3',
    '--schedules',
    'teamtr,lazy,joint',
    '--seeds',
    '0',
    '--baseline',
    'joint',
    '--out',
    directory,
    '--tokens-per-agent',
    '900',
    '--rollout-problems-per-batch',
    '2',
    '--rollout-group-size',
    '4',
    '--evaluation-problems',
    '8',
  ];
  const first = await runCli([...argv, '--result', result]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /## Scaling grid on worked-chain \(6 runs\), paired with joint/);
  const report = JSON.parse(
    readFileSync(path.join(directory, 'scaling.json'), 'utf8'),
  ) as ScalingReport;
  assert.deepEqual(
    report.paired.map((row) => `${row.agents}/${row.schedule}−${row.baseline}`),
    ['2/teamtr−joint', '2/lazy−joint', '3/teamtr−joint', '3/lazy−joint'],
  );
  // Budgets stop at the token: a team of N spends N × 900 tokens, give or take a prompt group.
  for (const row of report.outcomes)
    assert.ok(
      row.tokens >= 900 * row.agents && row.tokens < 900 * row.agents + 4 * row.agents * 45,
      `${row.agents}/${row.schedule}: ${row.tokens}`,
    );
  // Every update is measured out of sample, so every cell has its surrogate error and coverage.
  assert.equal(report.surrogateError.length, 6);
  assert.equal(report.certificateCoverage.length, 6);
  assert.deepEqual(
    report.resampling.map((row) => row.schedule),
    ['lazy', 'lazy'],
  );
  assert.ok(report.occupancyRange.every((row) => row.outside === 0));
  const written = JSON.parse(readFileSync(result, 'utf8')) as {
    format: string;
    command: string;
    tables: { caption: string; columns: string[]; rows: unknown[][] }[];
    wallSeconds: number;
  };
  assert.equal(written.format, 'teamtr-result/1');
  assert.match(
    written.command,
    /^node bin\/teamtr\.js scaling --task worked-chain --team-sizes 2,3 /,
  );
  assert.match(written.tables[0]!.caption, /^Paired with joint/);
  assert.ok(
    written.tables.every((table) => table.rows.every((row) => row.length === table.columns.length)),
  );
  assert.ok(written.wallSeconds > 0);
  const curves = readFileSync(path.join(directory, 'scaling-curves-N3.svg'), 'utf8');
  assert.match(curves, /Held-out accuracy of teams of 3/);

  const again = await runCli(argv);
  assert.equal(again.code, 0, again.stderr);
  assert.equal((again.stderr.match(/already finished/g) ?? []).length, 6);
  assert.equal(again.stdout, first.stdout);

  // A run stored before a config section existed (here: tracking) ran with that section's
  // default, so it is reused.
  const stored = path.join(directory, 'N2-teamtr-seed0', 'config.json');
  const { tracking: _tracking, ...older } = JSON.parse(readFileSync(stored, 'utf8')) as Record<
    string,
    unknown
  >;
  assert.ok(_tracking);
  writeFileSync(stored, JSON.stringify(older));
  const reused = await runCli(argv);
  assert.equal(reused.code, 0, reused.stderr);
  assert.equal((reused.stderr.match(/already finished/g) ?? []).length, 6);

  // A changed budget does not silently reuse runs made with another one.
  const changed = await runCli([...argv, '--tokens-per-agent', '500']);
  assert.equal(changed.code, 2);
  assert.match(changed.stderr, /--out.*N2-teamtr-seed0 holds a run with other .*budget/);

  const wrong = await runCli(['scaling', '--team-sizes', '9', '--out', directory]);
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /--team-sizes.*"9" does not fit the task: task.agents/);
  const mismatch = await runCli([
    'scaling',
    '--task',
    'convention',
    '-c',
    'configs/scaling-worked-chain.yaml',
  ]);
  assert.equal(mismatch.code, 2);
  assert.match(
    mismatch.stderr,
    /--task: is "convention" but configs\/scaling-worked-chain.yaml trains "worked-chain"/,
  );
});
