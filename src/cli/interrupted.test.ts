import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { createTrainingFixture } from '../trainer/test-support/fixture.js';
import { comparableRecords, savedUnit } from '../trainer/test-support/run-files.js';
import { train } from '../trainer/trainer.js';
import type { StopSignal } from './interrupted.js';

const mainModule = new URL('./main.ts', import.meta.url);
const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

let fixture: Awaited<ReturnType<typeof createTrainingFixture>>;
let configPath: string;
let uninterrupted: string;
before(async () => {
  fixture = await createTrainingFixture();
  cleanup.push(fixture.directory);
  const config = {
    ...fixture.config,
    checkpointEvery: 1,
    budget: { generatedTokens: 10_000_000, maxStages: 4 },
  };
  configPath = path.join(fixture.directory, 'team.json');
  writeFileSync(configPath, JSON.stringify(config));
  uninterrupted = path.join(fixture.directory, 'uninterrupted');
  await train({ config, runDirectory: uninterrupted });
});

/**
 * `teamtr train` in a child process, sent `signal` once it has reported its first stage;
 * with `closeOutput`, its stderr is closed first, as a closed terminal leaves it.
 */
async function trainUntilSignal(
  runDirectory: string,
  signal: StopSignal,
  options: { closeOutput?: boolean } = {},
): Promise<{ code: number | null; stderr: string }> {
  const script =
    `const { main } = await import(${JSON.stringify(pathToFileURL(mainModule.pathname).href)});` +
    'process.exitCode = await main(JSON.parse(process.env.TEAMTR_TEST_ARGV));';
  const argv = ['train', '--config', configPath, '--run-dir', runDirectory];
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, TEAMTR_QUIET_BACKEND: '1', TEAMTR_TEST_ARGV: JSON.stringify(argv) },
  });
  let stderr = '';
  let sent = false;
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (sent || !/stage 1\/~?\d+ reward/.test(stderr)) return;
    sent = true;
    if (options.closeOutput) {
      child.stderr.destroy();
      child.stdout.destroy();
    }
    child.kill(signal);
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, stderr };
}

describe('SIGTERM and SIGHUP stop a training run as Ctrl-C does', () => {
  for (const [signal, closeOutput] of [
    ['SIGTERM', false],
    ['SIGHUP', false],
    ['SIGHUP', true],
  ] as const) {
    test(`${signal}${closeOutput ? ' with the terminal gone' : ''}: the run saves, exits 130, and resumes bit-identically`, async () => {
      const runDirectory = path.join(fixture.directory, `${signal}${closeOutput ? '-closed' : ''}`);
      const { code, stderr } = await trainUntilSignal(runDirectory, signal, { closeOutput });
      assert.equal(code, 130, stderr);
      if (!closeOutput) assert.match(stderr, /finishing the current stage and saving/);
      const summary = JSON.parse(readFileSync(path.join(runDirectory, 'summary.json'), 'utf8'));
      assert.equal(summary.interrupted, true);
      assert.ok(summary.stages >= 1 && summary.stages < 4, `stopped early (${summary.stages})`);

      const resumed = await train({ config: {}, runDirectory, resume: true });
      assert.equal(resumed.stages, 4);
      assert.equal(resumed.interrupted, false);
      assert.deepEqual(comparableRecords(runDirectory), comparableRecords(uninterrupted));
      for (const unit of ['agent0', 'agent1', 'agent2'])
        assert.deepEqual(
          await savedUnit(runDirectory, unit),
          await savedUnit(uninterrupted, unit),
          `${unit}'s weights and optimizer`,
        );
    });
  }
});
