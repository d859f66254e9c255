import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { packagePath, teamtrVersion } from './package-root.js';

test('teamtrVersion is the version in the package’s own package.json', () => {
  const manifest = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  assert.equal(manifest.name, 'teamtr');
  assert.match(manifest.version, /^\d+\.\d+\.\d+/);
  assert.equal(teamtrVersion(), manifest.version);
});
