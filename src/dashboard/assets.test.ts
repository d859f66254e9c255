import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runBounded } from '../util/test-support/bounded-child.js';
import { assets } from './assets.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-dashboard-assets-'));
after(() => rmSync(directory, { recursive: true, force: true }));

describe('dashboard assets are read through the bounded reader', () => {
  test('the installed assets are served', async () => {
    const script = await assets['uPlot.iife.min.js']!.body();
    assert.ok(script.length > 10_000 && script.length < 4 * 2 ** 20);
    assert.match(String(await assets['uPlot.min.css']!.body()), /\.uplot/);
  });

  test('an asset that is a device, a FIFO, too large or missing is refused with what to do', async () => {
    const cases = {
      device: '/dev/zero',
      fifo: null,
      large: 5 * 2 ** 20,
      missing: undefined,
    } as const;
    // uPlot's two files and the built script, in a folder for each kind of defect.
    for (const [kind, source] of Object.entries(cases)) {
      const folder = path.join(directory, kind);
      mkdirSync(folder);
      for (const name of ['uPlot.iife.min.js', 'uPlot.min.css', 'dashboard.js']) {
        const file = path.join(folder, name);
        if (typeof source === 'string') symlinkSync(source, file);
        else if (source === null) execFileSync('mkfifo', [file]);
        else if (typeof source === 'number') {
          writeFileSync(file, '');
          truncateSync(file, source);
        }
      }
    }
    const module = JSON.stringify(new URL('./assets.ts', import.meta.url).href);
    // In a child under a memory and a time limit: /dev/zero read whole never ends.
    const result = await runBounded({
      setup: `const { assetsFrom } = await import(${module});`,
      body: Object.keys(cases)
        .map((kind) => {
          const folder = JSON.stringify(path.join(directory, kind));
          return [
            `{ const table = assetsFrom({ uplotDirectory: ${folder}, builtScript: ${folder} + '/dashboard.js' });`,
            `for (const name of ['uPlot.iife.min.js', 'uPlot.min.css', 'dashboard.js'])`,
            `  await table[name].body().then(() => console.log('served'), (error) => console.log(error.message)); }`,
          ].join('\n');
        })
        .join('\n'),
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
    const lines = result.stdout.trim().split('\n');
    const kinds: Record<keyof typeof cases, RegExp> = {
      device: /is a character device \(such as \/dev\/zero\), not a regular file/,
      fifo: /is a named pipe \(FIFO\), not a regular file/,
      large: /is 5 MiB; .* is at most 4 MiB; the dashboard's own files are well under it/,
      missing: /file not found/,
    };
    assert.equal(lines.length, 12, result.stdout + result.stderr);
    Object.entries(kinds).forEach(([kind, pattern], index) =>
      lines.slice(3 * index, 3 * index + 3).forEach((line, file) => {
        assert.match(line, pattern, `${kind} ${file}`);
        assert.ok(line.includes(path.join(directory, kind)), line);
        assert.match(line, file < 2 ? /npm ci/ : /npm run build/, line);
      }),
    );
  });
});
