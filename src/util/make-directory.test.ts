import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { makeDirectory, makeDirectorySync } from './make-directory.js';
import { canCreateIn, readOnlyDirectory } from './test-support/read-only-directory.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'teamtr-make-directory-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const refusal = (code: string, where: string) => (error: NodeJS.ErrnoException) =>
  error.code === code && error.path === where;

test('makes every missing level, and is content when the directory exists', async () => {
  const deep = path.join(scratch, 'a', 'b', 'c');
  await makeDirectory(deep);
  makeDirectorySync(deep);
  assert.ok(existsSync(deep));
});

test('under a file: ENOTDIR', async () => {
  const file = path.join(scratch, 'file');
  writeFileSync(file, '');
  await assert.rejects(makeDirectory(path.join(file, 'x', 'y')), { code: 'ENOTDIR' });
  assert.throws(() => makeDirectorySync(path.join(file, 'x')), { code: 'ENOTDIR' });
});

test('on a read-only disk: the real cause with its path, where recursive mkdir says ENOENT', async (t) => {
  const readOnly = readOnlyDirectory({});
  try {
    if (canCreateIn(readOnly.path))
      return t.skip('root without the right to mount: nothing is read-only');
    const code = readOnly.refusal === 'read-only file system' ? 'EROFS' : 'EACCES';
    const first = path.join(readOnly.path, 'new');
    await assert.rejects(makeDirectory(path.join(first, 'run')), refusal(code, first));
    assert.throws(() => makeDirectorySync(path.join(first, 'run')), refusal(code, first));
  } finally {
    readOnly.remove();
  }
});
