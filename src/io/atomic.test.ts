import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, beforeEach, describe, test } from 'node:test';
import { TeamtrError } from '../util/errors.js';
import {
  recoverInterruptedReplace,
  replaceDirectoryAtomic,
  writeFileAtomic,
  writeJsonAtomic,
} from './atomic.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-atomic-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Above Linux's PID_MAX_LIMIT (2^22), so no process can have it: a crashed writer. */
const deadPid = 99_999_999;

let work = '';
beforeEach(() => {
  work = mkdtempSync(path.join(root, 'case-'));
});

describe('writeFileAtomic', () => {
  test('writes, overwrites, accepts chunks and leaves no temp file', async () => {
    const file = path.join(work, 'nested', 'out.bin');
    await writeFileAtomic(file, 'first');
    assert.equal(readFileSync(file, 'utf8'), 'first');
    await writeFileAtomic(file, [new Uint8Array([104, 105]), new Uint8Array([33])]);
    assert.equal(readFileSync(file, 'utf8'), 'hi!');
    assert.deepEqual(readdirSync(path.dirname(file)), ['out.bin']);
  });

  test('a failed write leaves the old file and no temp file', async () => {
    const file = path.join(work, 'target');
    mkdirSync(file); // renaming a file over a directory fails
    writeFileSync(path.join(file, 'keep'), 'x');
    await assert.rejects(writeFileAtomic(file, 'data'));
    assert.deepEqual(readdirSync(work), ['target']);
    assert.equal(readFileSync(path.join(file, 'keep'), 'utf8'), 'x');
  });

  test('writeJsonAtomic writes indented JSON with a trailing newline', async () => {
    const file = path.join(work, 'value.json');
    await writeJsonAtomic(file, { a: [1, 2] });
    assert.equal(readFileSync(file, 'utf8'), '{\n  "a": [\n    1,\n    2\n  ]\n}\n');
  });
});

describe('replaceDirectoryAtomic', () => {
  const fillWith = (files: Record<string, string>) => async (directory: string) => {
    for (const [name, text] of Object.entries(files))
      await writeFile(path.join(directory, name), text);
  };

  test('creates, then replaces the whole directory', async () => {
    const target = path.join(work, 'checkpoint');
    await replaceDirectoryAtomic(target, fillWith({ 'a.txt': 'one', 'old-only.txt': 'x' }));
    await replaceDirectoryAtomic(target, fillWith({ 'a.txt': 'two' }));
    assert.deepEqual(readdirSync(target), ['a.txt']);
    assert.equal(readFileSync(path.join(target, 'a.txt'), 'utf8'), 'two');
    assert.deepEqual(readdirSync(work), ['checkpoint']);
  });

  test('when fill throws, the previous directory is intact and no temp directory remains', async () => {
    const target = path.join(work, 'checkpoint');
    await replaceDirectoryAtomic(target, fillWith({ 'weights.bin': 'good' }));
    await assert.rejects(
      replaceDirectoryAtomic(target, async (directory) => {
        await writeFile(path.join(directory, 'weights.bin'), 'half-writ');
        throw new Error('disk full (simulated)');
      }),
      /disk full \(simulated\)/,
    );
    assert.equal(readFileSync(path.join(target, 'weights.bin'), 'utf8'), 'good');
    assert.deepEqual(readdirSync(work), ['checkpoint']);
  });

  test('when the first fill throws, nothing is created', async () => {
    const target = path.join(work, 'fresh');
    await assert.rejects(
      replaceDirectoryAtomic(target, async () => Promise.reject(new Error('boom'))),
      /boom/,
    );
    assert.deepEqual(readdirSync(work), []);
  });

  test('removes temp directories of dead writers but not of live ones', async () => {
    const target = path.join(work, 'checkpoint');
    const stale = path.join(work, `.checkpoint.tmp-${deadPid}-abc123`);
    const live = path.join(work, `.checkpoint.tmp-${process.ppid}-def456`);
    const otherTarget = path.join(work, `.other.tmp-${deadPid}-abc123`);
    // Ours by pid, but no write of this process is using it: left by an earlier failure.
    const ownStale = path.join(work, `.checkpoint.tmp-${process.pid}-0f0f0f`);
    for (const directory of [stale, live, otherTarget, ownStale]) mkdirSync(directory);
    await replaceDirectoryAtomic(target, fillWith({ 'a.txt': 'new' }));
    assert.equal(existsSync(stale), false);
    assert.equal(existsSync(ownStale), false);
    assert.equal(existsSync(live), true);
    assert.equal(existsSync(otherTarget), true);
  });

  test('a crash between the two renames is repaired: the previous directory comes back', async () => {
    const target = path.join(work, 'checkpoint');
    // State after "move the old one aside" and before "move the new one in", then a crash.
    const aside = path.join(work, `.checkpoint.old-${deadPid}-0a1b2c`);
    const orphan = path.join(work, `.checkpoint.tmp-${deadPid}-3d4e5f`);
    mkdirSync(aside);
    writeFileSync(path.join(aside, 'weights.bin'), 'previous');
    mkdirSync(orphan);
    await recoverInterruptedReplace(target);
    assert.equal(readFileSync(path.join(target, 'weights.bin'), 'utf8'), 'previous');
    assert.deepEqual(readdirSync(work), ['checkpoint']);
  });

  test('an aside copy left after a completed swap is deleted, not restored', async () => {
    const target = path.join(work, 'checkpoint');
    mkdirSync(target);
    writeFileSync(path.join(target, 'weights.bin'), 'newest');
    const aside = path.join(work, `.checkpoint.old-${deadPid}-0a1b2c`);
    mkdirSync(aside);
    await recoverInterruptedReplace(target);
    assert.equal(readFileSync(path.join(target, 'weights.bin'), 'utf8'), 'newest');
    assert.deepEqual(readdirSync(work), ['checkpoint']);
  });

  test('refuses to replace a regular file with a directory', async () => {
    const target = path.join(work, 'not-a-directory');
    writeFileSync(target, 'x');
    await assert.rejects(replaceDirectoryAtomic(target, fillWith({})), TeamtrError);
    assert.equal(readFileSync(target, 'utf8'), 'x');
  });
});
