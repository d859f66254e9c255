import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTrainingFixture } from '../../trainer/test-support/fixture.js';
import { train } from '../../trainer/trainer.js';
import { runCli } from '../test-support/run-cli.js';

let directory: string;
let runDirectory: string;

before(async () => {
  const fixture = await createTrainingFixture();
  directory = fixture.directory;
  runDirectory = path.join(directory, 'run');
  await train({
    config: { ...fixture.config, tracking: { transcriptsPerStage: 3 } },
    runDirectory,
  });
});
after(() => rmSync(directory, { recursive: true, force: true }));

describe('seeing what the agents wrote', () => {
  test('teamtr samples RUN prints the latest stage’s transcripts; --stage and --n choose', async () => {
    const latest = await runCli(['samples', runDirectory]);
    assert.equal(latest.code, 0, latest.stderr);
    const headings =
      latest.stdout.match(/^stage \d+ · problem \S+ · episode \d+ · reward [\d.]+/gm) ?? [];
    assert.equal(headings.length, 3);
    assert.ok(headings.every((heading) => heading.startsWith('stage 4 ')));
    assert.match(latest.stdout, /turn 0 agent0 — [12] tokens?, ended by (stop|turn limit)\n {4}/);
    assert.match(latest.stdout, /turn 2 agent2 — /);
    const chosen = await runCli(['samples', runDirectory, '--stage', '2', '--n', '1', '--json']);
    assert.equal(chosen.code, 0, chosen.stderr);
    const transcripts = JSON.parse(chosen.stdout) as Array<{ stage: number; turns: unknown[] }>;
    assert.deepEqual(
      transcripts.map((transcript) => transcript.stage),
      [2],
    );
    assert.equal(transcripts[0]!.turns.length, 3);
  });

  test('a stage without transcripts, or a directory that is not a run, is a clear error', async () => {
    const missing = await runCli(['samples', runDirectory, '--stage', '9']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /has no transcripts of stage 9; it has stages 1–4 \(--stage N\)/);
    const bad = await runCli(['samples', runDirectory, '--n', 'two']);
    assert.match(bad.stderr, /--n must be a positive integer, got "two"/);
    const notRun = await runCli(['samples', directory]);
    assert.equal(notRun.code, 2);
    assert.match(notRun.stderr, /not a teamtr run directory/);
    assert.doesNotMatch(notRun.stderr, /\n\s+at /, 'no stack trace');
  });

  test('teamtr eval --samples N prints N transcripts of the evaluation', async () => {
    const printed = await runCli(['eval', runDirectory, '--problems', '5', '--samples', '2']);
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /^team accuracy .* on 5 /);
    assert.equal((printed.stdout.match(/^stage 4 · problem /gm) ?? []).length, 2);
    const json = await runCli([
      'eval',
      runDirectory,
      '--problems',
      '5',
      '--samples',
      '3',
      '--json',
    ]);
    const result = JSON.parse(json.stdout) as {
      samples: Array<{ turns: Array<{ ended: string }> }>;
    };
    assert.equal(result.samples.length, 3);
    assert.ok(result.samples.every((sample) => sample.turns.length === 3));
  });
});
