import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { runCli } from '../test-support/run-cli.js';
import { createTrainingFixture } from '../../trainer/test-support/fixture.js';
import { directorySnapshot } from '../../trainer/test-support/run-files.js';
import { createSwapModels } from '../../trainer/test-support/swap-models.js';
import { train } from '../../trainer/trainer.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

test('teamtr swap schedules a swap on an existing run (one JSON object with --json) and refuses a missing model cleanly', async () => {
  const fixture = await createTrainingFixture();
  cleanup.push(fixture.directory);
  const models = await createSwapModels(fixture.directory);
  const runDirectory = path.join(fixture.directory, 'run');
  const controller = new AbortController();
  await train({
    config: fixture.config,
    runDirectory,
    signal: controller.signal,
    onProgress: (event) => {
      if (event.kind === 'stage' && event.stage === 2) controller.abort();
    },
  });
  const untouched = directorySnapshot(runDirectory);
  const missing = await runCli([
    'swap',
    runDirectory,
    '--agent',
    'agent2',
    '--model',
    path.join(fixture.directory, 'nothing-here'),
    '--json',
  ]);
  assert.equal(missing.code, 2);
  assert.equal(missing.stdout, '');
  assert.match(
    missing.stderr,
    /^teamtr: ConfigError: swaps\[0\]\.model: model ".*nothing-here" not found/,
  );
  assert.doesNotMatch(missing.stderr, /\n\s+at /, 'no stack trace for bad input');
  assert.deepEqual(directorySnapshot(runDirectory), untouched);

  const scheduled = await runCli([
    'swap',
    runDirectory,
    '--agent',
    'agent2',
    '--model',
    models.wide,
    '--align-steps',
    '3',
    '--align-mode',
    'sft+kl',
    '--json',
  ]);
  assert.equal(scheduled.code, 0, scheduled.stderr);
  const lines = scheduled.stdout.trim().split('\n');
  assert.equal(lines.length, 1);
  const result = JSON.parse(lines[0]!) as {
    checkpointStage: number;
    swap: {
      stage: number;
      agent: string;
      model: string;
      alignment: { steps: number; mode: string };
    };
  };
  assert.deepEqual(
    [
      result.checkpointStage,
      result.swap.stage,
      result.swap.agent,
      result.swap.model,
      result.swap.alignment.steps,
      result.swap.alignment.mode,
    ],
    [2, 3, 'agent2', models.wide, 3, 'sft+kl'],
  );
  const config = JSON.parse(readFileSync(path.join(runDirectory, 'config.json'), 'utf8')) as {
    swaps: unknown[];
  };
  assert.deepEqual(config.swaps, [result.swap]);
});
