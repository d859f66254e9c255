import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The user documentation: the README and every page under docs/ except the method spec. */
function userPages(): string[] {
  const pages = ['README.md', 'docs/README.md', 'docs/results.md'];
  for (const folder of ['docs/guides', 'docs/reference'])
    if (existsSync(path.join(root, folder)))
      for (const file of readdirSync(path.join(root, folder)))
        if (file.endsWith('.md')) pages.push(`${folder}/${file}`);
  return pages;
}

test('the README is for a user deciding and starting: at most 250 lines', () => {
  const lines = readFileSync(path.join(root, 'README.md'), 'utf8').trimEnd().split('\n');
  assert.ok(lines.length <= 250, `README.md has ${lines.length} lines`);
});

test('user documentation keeps no diary: no sessions, run dates or commit hashes', () => {
  const found: string[] = [];
  for (const page of userPages()) {
    // A run directory's default name carries its start time; that is a path, not a date.
    const text = readFileSync(path.join(root, page), 'utf8').replace(/runs\/\S+/g, 'runs/…');
    const patterns: Array<[string, RegExp]> = [
      // "session" as the diary's word (this session, the previous session's build), not as an
      // API's term (Tinker's session heartbeats).
      ['"session"', /\b(this|that|the|next|previous|last|earlier|one) sessions?\b|\bsession's\b/i],
      ['a date', /\b20\d\d-\d\d-\d\d\b/],
      ['a commit', /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/],
      ['"main at"', /\bmain at\b/],
    ];
    for (const [what, pattern] of patterns) {
      const match = pattern.exec(text);
      if (match) found.push(`${page}: ${what} (${JSON.stringify(match[0])})`);
    }
  }
  assert.deepEqual(found, []);
});
