import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, truncateSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runBounded } from '../../util/test-support/bounded-child.js';
import { EngineUserError } from './local-losses.js';
import {
  readWeightsFile,
  writeWeightsFile,
  type WeightsAbout,
  type WeightsSnapshot,
} from './weights-file.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-weights-file-'));
after(() => rmSync(directory, { recursive: true, force: true }));

const weightsPath = 'tinker://model-1/weights/a';
const about: WeightsAbout = {
  kind: 'weights',
  baseModel: 'tiny',
  lora: { rank: 2 },
  createdAt: 1,
  expiresAt: null,
};
const snapshot: WeightsSnapshot = {
  modelId: 'model-1',
  parameters: [Float32Array.of(1, 2, 3), Float32Array.of(-4.5)],
  optimizer: {
    step: 7,
    moments: [{ name: 'm', shape: [2, 2], data: Float32Array.of(1, 0, 0, 1) }],
  },
};

function saved(name: string): string {
  const file = path.join(directory, name);
  writeWeightsFile(file, weightsPath, snapshot, about);
  return file;
}

/** A damaged-state error (what a client of the server is told) naming the file. */
function refusal(file: string, detail: RegExp) {
  return (error: unknown) =>
    error instanceof EngineUserError &&
    error.message.includes(file) &&
    /delete the file and save the weights again/.test(error.message) &&
    detail.test(error.message);
}

describe('saved weights files are read through the bounded reader', () => {
  test('a saved file reads back', () => {
    const read = readWeightsFile(saved('good.weights'), weightsPath);
    assert.deepEqual(read, snapshot);
  });

  test('a file cut short is refused, naming it', () => {
    const file = saved('short.weights');
    truncateSync(file, readFileSync(file).length - 3);
    assert.throws(
      () => readWeightsFile(file, weightsPath),
      refusal(file, /29 data bytes where 32 were expected/),
    );
  });

  test('a file longer than its header lists is refused before it is read (3 GiB, sparse)', () => {
    const file = saved('long.weights');
    const size = readFileSync(file).length;
    truncateSync(file, 3 * 2 ** 30);
    assert.throws(
      () => readWeightsFile(file, weightsPath),
      refusal(
        file,
        new RegExp(
          `is 3 GiB; a saved weights file is at most ${size} bytes; its header lists 8 floats`,
        ),
      ),
    );
  });

  test('a header listing more numbers than memory holds is refused before allocating', () => {
    const file = path.join(directory, 'huge.weights');
    writeWeightsFile(
      file,
      weightsPath,
      {
        ...snapshot,
        optimizer: {
          step: 1,
          moments: [{ name: 'm', shape: [100_000, 100_000, 100], data: new Float32Array(0) }],
        },
      },
      about,
    );
    assert.throws(
      () => readWeightsFile(file, weightsPath),
      refusal(file, /1,000,000,000,004 floats.*more than one array can hold/),
    );
  });

  test('a device or a FIFO is refused at once, never read nor waited on', async () => {
    const device = path.join(directory, 'zero.weights');
    symlinkSync('/dev/zero', device);
    const fifo = path.join(directory, 'pipe.weights');
    execFileSync('mkfifo', [fifo]);
    const module = JSON.stringify(new URL('./weights-file.ts', import.meta.url).href);
    // In a child under a memory and a time limit: /dev/zero read whole never ends, nor does
    // opening a FIFO that no one writes.
    const calls = [device, fifo].flatMap((file) =>
      ['readWeightsFile', 'readWeightsHeader'].map(
        (name) =>
          `try { ${name}(${JSON.stringify(file)}, ${JSON.stringify(weightsPath)}); } catch (error) { console.log(error.message); }`,
      ),
    );
    const result = await runBounded({
      setup: `const { readWeightsFile, readWeightsHeader } = await import(${module});`,
      body: calls.join('\n'),
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
    const lines = result.stdout.trim().split('\n');
    assert.equal(lines.length, 4, result.stdout + result.stderr);
    lines.forEach((line, index) => {
      const [file, kind] = index < 2 ? [device, /a character device/] : [fifo, /a named pipe/];
      assert.ok(refusal(file, kind)(new EngineUserError(line)), line);
      assert.match(line, /not a regular file/);
    });
  });
});
