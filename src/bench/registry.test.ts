import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { getBackend } from '../backend/index.js';
import { parseResultLine, runWorkloadInChild } from './child-process.js';
import { findWorkload, realModelWorkloads, UnknownWorkloadError } from './registry.js';
import { TorchRealModelReference } from './torch-real-model.js';

const here = path.dirname(fileURLToPath(import.meta.url));

describe('the workload registry', () => {
  it('rejects an unknown workload with the list of known ones', () => {
    assert.throws(
      () => findWorkload('smollm2-135m-shape-generate-batch2'),
      (error: unknown) =>
        error instanceof UnknownWorkloadError &&
        error.known.includes('smollm2-135m-shape-generate-batch64') &&
        error.known.includes('llama-3m-score') &&
        /unknown benchmark workload "smollm2-135m-shape-generate-batch2" \(known: /.test(
          error.message,
        ),
    );
  });

  it('rejects an unknown workload before starting a process', () => {
    const options = { repeats: 1, warmup: 0 };
    assert.throws(() => runWorkloadInChild('no-such-workload', options), UnknownWorkloadError);
  });

  it('holds the real-model workloads by the names of their headline figures', () => {
    for (const name of Object.keys(realModelWorkloads))
      assert.match(name, /^smollm2-/, `${name} is a SmolLM2-shape workload`);
    assert.ok('smollm2-135m-shape-score-exact-kl' in realModelWorkloads);
  });
});

describe('a workload in its own process', () => {
  it('returns its figures, the bound, its peak resident set and the kernel paths it took', () => {
    const { results, paths } = runWorkloadInChild('llama-3m-score', { repeats: 1, warmup: 0 });
    const names = results.map((result) => [result.name, result.unit]);
    assert.deepEqual(names.slice(0, 3), [
      ['llama-3m-score', 'tokens/s'],
      ['llama-3m-score-sgemm4096', 'GFLOP/s'],
      ['llama-3m-score-sgemm4096-own', 'GFLOP/s'],
    ]);
    const bound = results[1]!.value;
    const parts = results.filter((result) => result.name.startsWith('llama-3m-score-sgemm4096-'));
    // The bound is the fastest of its parts (ours, and OpenBLAS's when it is installed).
    assert.equal(bound, Math.max(...parts.map((part) => part.value)));
    const peak = results.at(-1)!;
    assert.equal(peak.name, 'llama-3m-score-peak-rss');
    // A Node process with the engine loaded holds tens of MiB at least, and this one far less
    // than a GiB.
    assert.ok(peak.value > 10 && peak.value < 1024, `${peak.value} MiB`);
    // Scoring multiplies by its weights: the native backend counts those products' paths.
    if (getBackend().name === 'native')
      assert.ok(
        paths.some((path) => path.multiplyAdds > 0),
        JSON.stringify(paths),
      );
  });

  it('exits 2 with the list of workloads for an unknown name on its command line', () => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', path.join(here, 'run-workload.ts'), 'no-such-workload', '--json'],
      { encoding: 'utf8' },
    );
    assert.equal(run.status, 2);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /unknown benchmark workload "no-such-workload" \(known: .*llama-3m/);
  });

  it('refuses output lines that are not results', () => {
    assert.deepEqual(parseResultLine('{"name":"a","value":1,"unit":"x","threads":2}', 'w'), {
      name: 'a',
      value: 1,
      unit: 'x',
    });
    assert.throws(() => parseResultLine('{"name":"a","value":"1"}', 'w'), /w printed a line/);
    assert.throws(() => parseResultLine('Traceback', 'w'), /not a result: Traceback/);
  });
});

describe('the PyTorch real-model reference', () => {
  it('keeps each figure at its best thread setting and skips workloads it lacks', () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'torch-reference-'));
    try {
      // Stands in for pytorch/torch_real_model.py: the same arguments, the same output lines.
      const script = path.join(directory, 'fake-reference.mjs');
      writeFileSync(
        script,
        `const args = process.argv.slice(2);
if (args[0] === '--list') { console.log('work-a'); process.exit(0); }
const workload = args[args.indexOf('--workload') + 1];
if (workload !== 'work-a') process.exit(3);
for (const threads of args[args.indexOf('--threads') + 1].split(',').map(Number))
  console.log(JSON.stringify({ name: 'work-a', value: threads === 2 ? 30 : 20, unit: 'tokens/s', threads }));
console.log(JSON.stringify({ name: 'work-a-peak-rss', value: 500, unit: 'MiB' }));
console.log(JSON.stringify({ name: 'work-a-peak-rss', value: 400, unit: 'MiB' }));
`,
      );
      const reference = new TorchRealModelReference({
        python: process.execPath,
        script,
        repeats: 1,
        threads: [1, 2],
      });
      assert.deepEqual(reference.run('work-a'), [
        { name: 'work-a', value: 30, unit: 'tokens/s' },
        { name: 'work-a-peak-rss', value: 400, unit: 'MiB' },
      ]);
      assert.deepEqual(reference.run('work-b'), []);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
