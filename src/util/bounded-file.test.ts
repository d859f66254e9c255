import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  type BoundedReadOptions,
  openRegularFile,
  readBoundedFile,
  readBoundedFileSync,
  readBoundedText,
  readBoundedTextSync,
} from './bounded-file.js';
import { FileFormatError } from './errors.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-bounded-'));
after(() => rmSync(directory, { recursive: true, force: true }));

const small: BoundedReadOptions = { limit: { bytes: 16, hint: 'test limit' }, what: 'a test file' };
const readers = {
  async: (file: string, options = small) => readBoundedFile(file, options),
  sync: async (file: string, options = small) => readBoundedFileSync(file, options),
};

function fifo(name: string): string {
  const file = path.join(directory, name);
  execFileSync('mkfifo', [file]);
  return file;
}

describe('the bounded reader', () => {
  for (const [name, read] of Object.entries(readers)) {
    test(`${name}: reads a regular file whole, through a symlink too`, async () => {
      const file = path.join(directory, `${name}-ok.txt`);
      writeFileSync(file, 'héllo');
      const link = path.join(directory, `${name}-ok-link`);
      symlinkSync(file, link);
      assert.equal((await read(file)).toString('utf8'), 'héllo');
      assert.equal((await read(link)).toString('utf8'), 'héllo');
      const empty = path.join(directory, `${name}-empty.txt`);
      writeFileSync(empty, '');
      assert.equal((await read(empty)).length, 0);
    });

    test(`${name}: a file over the limit is refused from its size, naming the limit`, async () => {
      const file = path.join(directory, `${name}-big.txt`);
      writeFileSync(file, 'x'.repeat(17));
      await assert.rejects(
        read(file),
        (error: unknown) =>
          error instanceof FileFormatError &&
          error.file === file &&
          /is 17 bytes; a test file is at most 16 bytes; test limit/.test(error.message),
      );
    });

    test(`${name}: devices are refused before a byte is read`, async () => {
      for (const device of ['/dev/zero', '/dev/urandom', '/dev/null']) {
        await assert.rejects(read(device), /is a character device .*not a regular file/, device);
        const link = path.join(directory, `${name}-${path.basename(device)}-link`);
        symlinkSync(device, link);
        await assert.rejects(read(link), /is a character device/, `${link} → ${device}`);
      }
    });

    test(`${name}: a FIFO is refused at once instead of waiting for a writer`, async () => {
      await assert.rejects(read(fifo(`${name}-pipe`)), /is a named pipe \(FIFO\), not a regular/);
    });

    test(`${name}: a directory, a socket and a missing file say what they are`, async () => {
      await assert.rejects(read(directory), /is a directory/);
      await assert.rejects(read(path.join(directory, 'absent')), /file not found \(a test file\)/);
      const socketPath = path.join(directory, `${name}.sock`);
      const server = net.createServer().listen(socketPath);
      await new Promise((resolve) => server.once('listening', resolve));
      try {
        await assert.rejects(read(socketPath), /is a socket, not a regular file/);
      } finally {
        server.close();
      }
    });

    test(`${name}: a file that reports size 0 but holds more is capped while reading`, async () => {
      // /proc files report size 0 to stat and produce their text when read.
      await assert.rejects(
        read('/proc/self/status'),
        /is more than 16 bytes; a test file is at most 16 bytes/,
      );
      const text = (
        await read('/proc/self/status', { limit: { bytes: 1 << 20, hint: '' }, what: 'status' })
      ).toString();
      assert.match(text, /^Name:/);
    });
  }

  test('named limits quote their environment variable', async () => {
    const file = path.join(directory, 'config.yaml');
    writeFileSync(file, 'x'.repeat(100));
    process.env.TEAMTR_MAX_CONFIG_BYTES = '50';
    try {
      await assert.rejects(
        readBoundedText(file, { limit: 'configBytes', what: 'a config file' }),
        /is 100 bytes; a config file is at most 50 bytes \(TEAMTR_MAX_CONFIG_BYTES raises it\)/,
      );
      process.env.TEAMTR_MAX_CONFIG_BYTES = '100';
      assert.equal(
        readBoundedTextSync(file, { limit: 'configBytes', what: 'a config' }).length,
        100,
      );
      process.env.TEAMTR_MAX_CONFIG_BYTES = 'lots';
      assert.throws(
        () => readBoundedTextSync(file, { limit: 'configBytes', what: 'a config' }),
        /TEAMTR_MAX_CONFIG_BYTES: "lots" is not a valid limit/,
      );
    } finally {
      delete process.env.TEAMTR_MAX_CONFIG_BYTES;
    }
  });

  test('openRegularFile hands back the descriptor and size of a regular file only', async () => {
    const file = path.join(directory, 'weights.bin');
    writeFileSync(file, Buffer.alloc(40));
    const opened = await openRegularFile(file, 'a weight file');
    assert.equal(opened.size, 40);
    await opened.handle.close();
    await assert.rejects(openRegularFile(fifo('weights-pipe'), 'a weight file'), /named pipe/);
    await assert.rejects(openRegularFile('/dev/zero', 'a weight file'), /character device/);
  });
});
