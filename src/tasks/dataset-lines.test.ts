import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { runBounded } from '../util/test-support/bounded-child.js';
import { datasetLines } from './dataset-lines.js';

const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-dataset-lines-'));
after(() => rmSync(directory, { recursive: true, force: true }));
const jsonlModule = JSON.stringify(new URL('./jsonl.ts', import.meta.url).href);

async function collect(file: string): Promise<string[]> {
  const found: string[] = [];
  for await (const { number, text } of datasetLines(file)) found.push(`${number}:${text}`);
  return found;
}

/** Loads `file` as a JSONL task in a bounded child; prints the problem count or the error. */
async function loadBounded(file: string, env: Record<string, string> = {}) {
  const result = await runBounded({
    setup: `const { loadJsonlTask } = await import(${jsonlModule});`,
    body: `try { const task = await loadJsonlTask(${JSON.stringify(file)}, { verifier: 'exact' }); console.log(task.description); } catch (error) { console.log(error.message); }`,
    env,
  });
  assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
  assert.ok(result.peakRssBytes < 2 ** 30, `peak RSS ${result.peakRssBytes}`);
  return result.stdout.trim();
}

describe('dataset lines', () => {
  it('splits at newlines across read chunks, drops a CR before them, keeps empty lines', async () => {
    const file = path.join(directory, 'chunks.jsonl');
    const long = 'x'.repeat(3 * 2 ** 20 + 5);
    writeFileSync(file, `a\r\n\n${long}\nlast`);
    process.env.TEAMTR_MAX_DATASET_LINE_BYTES = String(4 * 2 ** 20);
    try {
      assert.deepEqual(await collect(file), ['1:a', '2:', `3:${long}`, '4:last']);
    } finally {
      delete process.env.TEAMTR_MAX_DATASET_LINE_BYTES;
    }
  });

  it('a 10 MB prompt is refused at load, naming the line, in bounded memory', async () => {
    const file = path.join(directory, 'long-prompt.jsonl');
    const ok = JSON.stringify({ prompt: '1+1', answer: '2' });
    writeFileSync(
      file,
      `${ok}\n${JSON.stringify({ prompt: 'y'.repeat(10_000_000), answer: '1' })}\n`,
    );
    assert.equal(
      await loadBounded(file),
      `${file}: line 2 is longer than 1 MiB; one problem (prompt, answer and metadata) is at most 1 MiB (TEAMTR_MAX_DATASET_LINE_BYTES raises it). A prompt this long would not fit a model's context: shorten it, or drop the line`,
    );
  });

  it('a 40 MB line loads in one linear pass once the line limit allows it', async () => {
    // Joining a line's pieces at every read chunk made this quadratic: a 25 MB line took 7 s.
    const file = path.join(directory, 'long-metadata.jsonl');
    const record = {
      prompt: '1+1',
      answer: '2',
      split: 'train',
      metadata: { blob: 'z'.repeat(40_000_000) },
    };
    writeFileSync(
      file,
      `${JSON.stringify(record)}\n${JSON.stringify({ prompt: '2+2', answer: '4', split: 'eval' })}\n`,
    );
    assert.match(
      await loadBounded(file, { TEAMTR_MAX_DATASET_LINE_BYTES: String(64 * 2 ** 20) }),
      /^2 problems from /,
    );
  });

  it('a device or a FIFO as the dataset is refused at once', async () => {
    const fifo = path.join(directory, 'pipe.jsonl');
    execFileSync('mkfifo', [fifo]);
    assert.match(await loadBounded('/dev/zero'), /^\/dev\/zero: is a character device/);
    assert.match(await loadBounded(fifo), /pipe\.jsonl: is a named pipe \(FIFO\)/);
  });
});
