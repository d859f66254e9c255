import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { parseMetricsLines, readMetricsSince } from './metrics-file.js';
import { syntheticRecords } from './test-support/synthetic-run.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-metrics-file-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const [first, second, third] = syntheticRecords({ stages: 1 }).map((record) =>
  JSON.stringify(record),
);

test('a trailing line without its newline is left for the next read', () => {
  const bytes = Buffer.from(`${first}\n${second}\n${third!.slice(0, 40)}`);
  const parsed = parseMetricsLines(bytes);
  assert.equal(parsed.records.length, 2);
  assert.equal(parsed.consumedBytes, Buffer.byteLength(`${first}\n${second}\n`));
  assert.equal(parsed.skippedLines, 0);
});

test('complete lines that are not records are counted and skipped, unknown types ignored', () => {
  const parsed = parseMetricsLines(
    Buffer.from(`${first}\nnot json\n[1,2]\n{"type":"future-kind"}\n\n${second}\n`),
  );
  assert.deepEqual(
    parsed.records.map((record) => record.type),
    [JSON.parse(first!).type, JSON.parse(second!).type],
  );
  assert.equal(parsed.skippedLines, 3);
});

test('readMetricsSince follows a file being appended to, across a line split mid-write', async () => {
  const file = path.join(scratch, 'growing.jsonl');
  writeFileSync(file, `${first}\n`);
  const start = await readMetricsSince(file, 0);
  assert.equal(start.records.length, 1);
  assert.equal(start.nextOffset, Buffer.byteLength(`${first}\n`));
  // A multi-byte character in the half that is written first must not be cut.
  const tricky = JSON.stringify({ ...JSON.parse(second!), agent: 'δ-agent' });
  appendFileSync(file, tricky.slice(0, tricky.indexOf('δ') + 1));
  const half = await readMetricsSince(file, start.nextOffset);
  assert.deepEqual(
    { records: half.records, nextOffset: half.nextOffset, reset: half.reset },
    { records: [], nextOffset: start.nextOffset, reset: false },
  );
  appendFileSync(file, `${tricky.slice(tricky.indexOf('δ') + 1)}\n`);
  const whole = await readMetricsSince(file, half.nextOffset);
  assert.equal(whole.records.length, 1);
  assert.equal((whole.records[0] as { agent: string }).agent, 'δ-agent');
  const nothing = await readMetricsSince(file, whole.nextOffset);
  assert.equal(nothing.records.length, 0);
});

test('a file shorter than the offset (truncated by a resume) restarts from the beginning', async () => {
  const file = path.join(scratch, 'truncated.jsonl');
  writeFileSync(file, `${first}\n${second}\n`);
  const full = await readMetricsSince(file, 0);
  truncateSync(file, Buffer.byteLength(`${first}\n`));
  const after = await readMetricsSince(file, full.nextOffset);
  assert.equal(after.reset, true);
  assert.equal(after.records.length, 1);
});

test('a missing file has no records yet', async () => {
  assert.deepEqual(await readMetricsSince(path.join(scratch, 'absent.jsonl'), 0), {
    records: [],
    nextOffset: 0,
    reset: false,
    skippedLines: 0,
  });
});

test('a FIFO is refused at once, and more new bytes than TEAMTR_MAX_METRICS_BYTES are refused by name', async () => {
  const fifo = path.join(scratch, 'fifo-metrics.jsonl');
  execFileSync('mkfifo', [fifo]);
  await assert.rejects(readMetricsSince(fifo, 0), /not a regular file|FIFO|pipe/i);

  const file = path.join(scratch, 'large-metrics.jsonl');
  writeFileSync(file, `${first}\n${second}\n${third}\n`);
  const previous = process.env.TEAMTR_MAX_METRICS_BYTES;
  process.env.TEAMTR_MAX_METRICS_BYTES = String(Buffer.byteLength(`${third}\n`));
  try {
    await assert.rejects(
      readMetricsSince(file, 0),
      /large-metrics\.jsonl.*TEAMTR_MAX_METRICS_BYTES/s,
    );
    // Reading on from an offset counts only the new bytes.
    const tail = Buffer.byteLength(`${first}\n${second}\n`);
    assert.equal((await readMetricsSince(file, tail)).records.length, 1);
  } finally {
    if (previous === undefined) delete process.env.TEAMTR_MAX_METRICS_BYTES;
    else process.env.TEAMTR_MAX_METRICS_BYTES = previous;
  }
});
