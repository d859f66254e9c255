import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodePathSegments, isInside, resolveFileInside } from './safe-path.js';

describe('decodePathSegments', () => {
  test('decodes percent-encoded segments and drops a trailing slash', () => {
    assert.deepEqual(decodePathSegments('/api/runs/0/files/a%20b.json/'), {
      ok: true,
      segments: ['api', 'runs', '0', 'files', 'a b.json'],
    });
    assert.deepEqual(decodePathSegments('/'), { ok: true, segments: [] });
  });

  test('refuses dot segments, encoded separators, NUL and empty segments', () => {
    for (const raw of [
      '/files/../secret',
      '/files/./x',
      '/files/%2e%2e/x',
      '/files/..%2f..%2fetc%2fpasswd',
      '/files/a%5cb',
      '/files/a%00',
      '/files//x',
    ]) {
      assert.equal(decodePathSegments(raw).ok, false, raw);
    }
  });

  test('refuses malformed percent-encoding', () => {
    const result = decodePathSegments('/files/%E0%A4%A');
    assert.equal(result.ok, false);
  });
});

describe('resolveFileInside', () => {
  let scratch = '';
  let root = '';

  before(async () => {
    scratch = await realpath(mkdtempSync(path.join(tmpdir(), 'teamtr-safe-path-')));
    root = path.join(scratch, 'run');
    mkdirSync(path.join(root, 'report'), { recursive: true });
    writeFileSync(path.join(root, 'config.json'), '{}');
    writeFileSync(path.join(root, 'report', 'index.html'), '<p>');
    writeFileSync(path.join(scratch, 'secret.txt'), 'secret');
    mkdirSync(path.join(scratch, 'outside'));
    writeFileSync(path.join(scratch, 'outside', 'file.txt'), 'outside');
    symlinkSync(path.join(scratch, 'secret.txt'), path.join(root, 'link-out.txt'));
    symlinkSync(path.join(scratch, 'outside'), path.join(root, 'dir-out'));
    symlinkSync(path.join(root, 'config.json'), path.join(root, 'link-in.json'));
  });

  after(() => rmSync(scratch, { recursive: true, force: true }));

  test('serves regular files inside, through links that stay inside', async () => {
    const inside = await resolveFileInside(root, ['report', 'index.html']);
    assert.deepEqual(inside, {
      kind: 'file',
      path: path.join(root, 'report', 'index.html'),
      size: 3,
    });
    const linked = await resolveFileInside(root, ['link-in.json']);
    assert.equal(linked.kind, 'file');
  });

  test('refuses links whose target, or whose parent directory, is outside', async () => {
    assert.equal((await resolveFileInside(root, ['link-out.txt'])).kind, 'refused');
    assert.equal((await resolveFileInside(root, ['dir-out', 'file.txt'])).kind, 'refused');
  });

  test('refuses segments that climb out, even if a caller forgot to decode-check them', async () => {
    assert.equal((await resolveFileInside(root, ['..', 'secret.txt'])).kind, 'refused');
  });

  test('reports missing files and refuses directories', async () => {
    assert.deepEqual(await resolveFileInside(root, ['nope.json']), { kind: 'missing' });
    assert.equal((await resolveFileInside(root, ['report'])).kind, 'refused');
  });

  test('isInside is a path-component check, not a string prefix check', () => {
    assert.equal(isInside('/a/run', '/a/run/x'), true);
    assert.equal(isInside('/a/run', '/a/run'), true);
    assert.equal(isInside('/a/run', '/a/run-other/x'), false);
    assert.equal(isInside('/a/run', '/a'), false);
    assert.equal(isInside('/a/run', '/a/run/..x'), true);
  });
});
