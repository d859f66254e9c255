import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { packagePath } from '../../util/package-root.js';
import { RunDirectory } from './run-directory.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'teamtr-marker-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

test('teamtr-run.json records the teamtr version that created the run; older markers still open', async () => {
  const runDirectory = path.join(scratch, 'run');
  await RunDirectory.create(runDirectory, { seed: 1 });
  const markerPath = path.join(runDirectory, 'teamtr-run.json');
  const marker = JSON.parse(readFileSync(markerPath, 'utf8')) as Record<string, unknown>;
  const { version } = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as {
    version: string;
  };
  assert.equal(marker.teamtrVersion, version);

  delete marker.teamtrVersion;
  writeFileSync(markerPath, JSON.stringify(marker));
  await RunDirectory.open(runDirectory);
  writeFileSync(markerPath, JSON.stringify({ ...marker, teamtrVersion: 3 }));
  await assert.rejects(RunDirectory.open(runDirectory), /teamtr-run\.json.*teamtrVersion/s);
});

test('metrics.jsonl is read through the bounded reader: past TEAMTR_MAX_METRICS_BYTES, or a FIFO, it is refused naming the file', async () => {
  const runDirectory = path.join(scratch, 'metrics');
  const run = await RunDirectory.create(runDirectory, { seed: 1 });
  run.appendMetrics([{ type: 'stage' }, { type: 'stage' }]);
  assert.equal(run.readMetrics().length, 2);
  process.env.TEAMTR_MAX_METRICS_BYTES = '16';
  try {
    assert.throws(
      () => run.readMetrics(),
      (error: Error) =>
        error.message ===
        `${run.metricsPath}: is 34 bytes; a run's metrics.jsonl is at most 16 bytes (TEAMTR_MAX_METRICS_BYTES raises it)`,
    );
  } finally {
    delete process.env.TEAMTR_MAX_METRICS_BYTES;
  }
  rmSync(run.metricsPath);
  execFileSync('mkfifo', [run.metricsPath]);
  assert.throws(() => run.readMetrics(), /metrics\.jsonl: is a named pipe \(FIFO\)/);
});
