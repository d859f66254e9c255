import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runBounded } from '../util/test-support/bounded-child.js';
import { readConfigFile } from './config-flags.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-config-file-'));
after(() => rmSync(directory, { recursive: true, force: true }));

describe('config files are read with bounds', () => {
  test('a device, a FIFO or a link to a device is refused at once, never read', async () => {
    const pipe = path.join(directory, 'pipe.yaml');
    execFileSync('mkfifo', [pipe]);
    const link = path.join(directory, 'config.json');
    symlinkSync('/dev/zero', link);
    const files = ['/dev/zero', '/dev/urandom', pipe, link];
    // In a child: a regression would block on the FIFO or read /dev/zero forever.
    const result = await runBounded({
      setup: `const { readConfigFile } = await import(${JSON.stringify(new URL('./config-flags.ts', import.meta.url).href)});`,
      body: `for (const file of ${JSON.stringify(files)}) { try { readConfigFile(file); console.log('read'); } catch (error) { console.log(error.message); } }`,
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
    const lines = result.stdout.trim().split('\n');
    assert.match(lines[0]!, /^\/dev\/zero: is a character device/);
    assert.match(lines[1]!, /^\/dev\/urandom: is a character device/);
    assert.match(lines[2]!, /pipe\.yaml: is a named pipe \(FIFO\)/);
    assert.match(lines[3]!, /config\.json: is a character device/);
  });

  test('a JSON config that repeats a key is refused, naming the key (as YAML configs are)', () => {
    const file = path.join(directory, 'team.json');
    writeFileSync(file, '{"seed": 1, "rollout": {"groupSize": 4, "groupSize": 8}}');
    assert.throws(
      () => readConfigFile(file),
      /team\.json: the key "rollout\.groupSize" appears twice/,
    );
    const yaml = path.join(directory, 'team.yaml');
    writeFileSync(yaml, 'seed: 1\nseed: 2\n');
    assert.throws(() => readConfigFile(yaml), /team\.yaml: is not valid YAML: .*unique/);
  });

  test('teamtr train -c /dev/zero exits with the reason, in bounded memory and time', async () => {
    const main = JSON.stringify(new URL('./main.ts', import.meta.url).href);
    const result = await runBounded({
      setup: `const { main } = await import(${main});`,
      body: `process.exitCode = await main(['train', '-c', '/dev/zero', '--run-dir', ${JSON.stringify(path.join(directory, 'run'))}]);`,
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /\/dev\/zero: is a character device/);
    assert.ok(result.peakRssBytes < 2 ** 30);
  });
});
