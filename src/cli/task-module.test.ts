import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createTrainingFixture } from '../trainer/test-support/fixture.js';
import { runCli } from './test-support/run-cli.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

/** A training config without a task, and a CommonJS task module over the fixture's problems. */
async function hostileModule(reward: string) {
  const fixture = await createTrainingFixture();
  cleanup.push(fixture.directory);
  const jsonl = fixture.config.task as { path: string; roles: unknown };
  const lines = readFileSync(jsonl.path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  const problems = (split: string) =>
    lines
      .filter((line) => line.split === split)
      .map(({ id, prompt, answer }) => ({ id, prompt, answer }));
  // As `npm init -y` leaves a project: "type": "commonjs", and the task in TypeScript.
  writeFileSync(
    path.join(fixture.directory, 'package.json'),
    '{"name": "app", "version": "1.0.0", "type": "commonjs"}',
  );
  const modulePath = path.join(fixture.directory, 'task.ts');
  writeFileSync(
    modulePath,
    `const problems = ${JSON.stringify({ train: problems('train'), eval: problems('eval') })};\n` +
      `export default { name: 'from-module', problems, roles: ${JSON.stringify(jsonl.roles)}, maxTurnChars: 2,\n` +
      `  reward: ${reward} };\n`,
  );
  const config = { ...fixture.config, budget: { generatedTokens: 100_000, maxStages: 1 } };
  delete (config as { task?: unknown }).task;
  const configPath = path.join(fixture.directory, 'team.json');
  writeFileSync(configPath, JSON.stringify(config));
  const runDirectory = path.join(fixture.directory, 'run');
  return {
    argv: ['train', '--config', configPath, '--task-module', modulePath, '--run-dir', runDirectory],
    runDirectory,
  };
}

describe('teamtr train --task-module with a module that misbehaves', () => {
  test('process.exit(0) in a reward stops the run with an error, not a silent exit 0', async () => {
    const { argv, runDirectory } = await hostileModule('(): number => process.exit(0)');
    const result = await runCli(argv);
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stderr,
      /TaskModuleError: --task-module .*task\.ts: its worker stopped \(exit code 0\): the module called process\.exit\(0\)/,
    );
    assert.equal(
      existsSync(path.join(runDirectory, 'running.json')),
      false,
      'the run lock is released',
    );
  });

  test('a reward that never settles is cut at the call limit, and the lock is released', async () => {
    const { argv, runDirectory } = await hostileModule(
      '(): Promise<number> => new Promise(() => {})',
    );
    process.env.TEAMTR_TASK_CALL_MS = '1000'; // the child inherits it
    const result = await runCli(argv).finally(() => delete process.env.TEAMTR_TASK_CALL_MS);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /within 1 s \(TEAMTR_TASK_CALL_MS raises it\)/);
    assert.equal(existsSync(path.join(runDirectory, 'running.json')), false);
  });
});
