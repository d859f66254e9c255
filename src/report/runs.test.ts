import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TeamtrError } from '../util/errors.js';
import { loadRuns, resolveRunDirectories, runLabels, runSchedule } from './runs.js';
import { writeSyntheticRun } from './test-support/synthetic-run.js';

describe('run directories', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-runs-'));
  const compare = path.join(scratch, 'compare');

  before(async () => {
    await writeSyntheticRun(path.join(compare, 'teamtr-seed1'), { seed: 1 });
    await writeSyntheticRun(path.join(compare, 'joint-seed0'), {
      schedule: 'joint',
      running: true,
    });
    mkdirSync(path.join(compare, 'not-a-run'));
    mkdirSync(path.join(scratch, 'empty'));
    symlinkSync(path.join(compare, 'joint-seed0'), path.join(scratch, 'alias'));
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  test('a directory of runs stands for its runs in name order; duplicates through links are dropped', async () => {
    const directories = await resolveRunDirectories([compare, path.join(scratch, 'alias')]);
    assert.deepEqual(directories, [
      path.join(compare, 'joint-seed0'),
      path.join(compare, 'teamtr-seed1'),
    ]);
  });

  test('missing, foreign and empty inputs are refused with what to pass instead', async () => {
    await assert.rejects(
      resolveRunDirectories([]),
      (error: Error) =>
        error instanceof TeamtrError && /no run directory given/.test(error.message),
    );
    await assert.rejects(resolveRunDirectories([path.join(scratch, 'absent')]), /does not exist/);
    await assert.rejects(
      resolveRunDirectories([path.join(scratch, 'empty')]),
      /not a teamtr run directory .* holds none/,
    );
    writeFileSync(path.join(scratch, 'file'), '');
    await assert.rejects(resolveRunDirectories([path.join(scratch, 'file')]), /not a directory/);
  });

  test('labels are directory names, with parents added only where names clash', () => {
    assert.deepEqual(runLabels(['/a/x/run', '/b/y/run', '/c/other']), ['x/run', 'y/run', 'other']);
    assert.deepEqual(runLabels(['/a/run']), ['run']);
  });

  test('loadRuns reads config, records and summary (null while running)', async () => {
    const runs = await loadRuns(await resolveRunDirectories([compare]));
    assert.deepEqual(
      runs.map((run) => [run.id, run.label, runSchedule(run), run.summary === null]),
      [
        ['0', 'joint-seed0', 'joint', true],
        ['1', 'teamtr-seed1', 'teamtr', false],
      ],
    );
    assert.ok(runs[0]!.records.length > 10);
  });
});
