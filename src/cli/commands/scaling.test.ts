import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { ScalingReport } from '../../experiments/scaling-report.js';
import { runCli } from '../test-support/run-cli.js';

const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-scaling-'));
after(() => rmSync(directory, { recursive: true, force: true }));

test('teamtr scaling runs the grid on the long-turn task, reports it, and reuses finished runs', async () => {
  const argv = [
    'scaling',
    '--team-sizes',
    '2,3',
    '--schedules',
    'teamtr,joint',
    '--seeds',
    '0',
    '--out',
    directory,
    '--budget-max-stages',
    '2',
    '--rollout-problems-per-batch',
    '2',
    '--rollout-group-size',
    '4',
    '--evaluation-problems',
    '8',
    '--evaluation-every',
    '1',
  ];
  const first = await runCli(argv);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /## Accuracy and regressions \(4 runs\)/);
  const report = JSON.parse(
    readFileSync(path.join(directory, 'scaling.json'), 'utf8'),
  ) as ScalingReport;
  assert.deepEqual(
    report.outcomes.map((row) => `${row.agents}/${row.schedule}`),
    ['2/teamtr', '2/joint', '3/teamtr', '3/joint'],
  );
  // Every update is measured out of sample, so every cell has its surrogate error.
  assert.equal(report.surrogateError.length, 4);
  assert.ok(report.occupancyGap.some((row) => row.agents === 3 && row.updateIndex === 2));
  // The training curves, one figure per team size, a legend entry per schedule and band.
  const curves = readFileSync(path.join(directory, 'scaling-curves-N3.svg'), 'utf8');
  assert.match(curves, /^<svg[^>]*>/);
  assert.match(curves, /Held-out accuracy of teams of 3/);
  assert.equal((curves.match(/>joint seed band</g) ?? []).length, 1);
  const again = await runCli(argv);
  assert.equal(again.code, 0, again.stderr);
  assert.equal((again.stderr.match(/already finished/g) ?? []).length, 4);
  assert.equal(again.stdout, first.stdout);

  // A changed budget does not silently reuse runs made with another one.
  const changed = await runCli([...argv, '--tokens-per-agent', '500']);
  assert.equal(changed.code, 2);
  assert.match(changed.stderr, /--out.*N2-teamtr-seed0 holds a run with other budget settings/);

  const wrong = await runCli(['scaling', '--team-sizes', '9', '--out', directory]);
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /--team-sizes.*"9" is not an integer from 2 to 8/);
});
