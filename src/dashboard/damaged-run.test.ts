import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { RunOverview } from '../report/run-overview.js';
import { writeSyntheticRun } from '../report/test-support/synthetic-run.js';
import { startDashboard } from './server.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-dashboard-damaged-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('one damaged run is listed as damaged, saying why; the others are served as usual', async () => {
  const runs = path.join(scratch, 'runs');
  await writeSyntheticRun(path.join(runs, 'a-good'), { seed: 0 });
  await writeSyntheticRun(path.join(runs, 'b-bad-marker'), { seed: 1 });
  await writeSyntheticRun(path.join(runs, 'c-no-config'), { seed: 2 });
  await writeSyntheticRun(path.join(runs, 'd-good'), { seed: 3 });
  writeFileSync(path.join(runs, 'b-bad-marker', 'teamtr-run.json'), 'garbage');
  rmSync(path.join(runs, 'c-no-config', 'config.json'));
  const server = await startDashboard({ runDirectories: [runs], port: 0 });
  try {
    const reply = await fetch(`${server.url}api/runs`);
    assert.equal(reply.status, 200);
    const listed = (await reply.json()) as RunOverview[];
    assert.deepEqual(
      listed.map((run) => [run.label, run.status]),
      [
        ['a-good', 'finished'],
        ['b-bad-marker', 'damaged'],
        ['c-no-config', 'damaged'],
        ['d-good', 'finished'],
      ],
    );
    assert.match(listed[1]!.damage!, /b-bad-marker\/teamtr-run\.json: not valid JSON/);
    assert.match(
      listed[2]!.damage!,
      /c-no-config: the run was stopped while its directory was being created/,
    );
    assert.equal(listed[0]!.damage, null);
    assert.ok(listed[0]!.records > 0 && listed[3]!.records > 0, 'the good runs are read');
    assert.equal((await fetch(`${server.url}api/overview`)).status, 200);
  } finally {
    await server.close();
  }
});
