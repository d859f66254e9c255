import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTrainingFixture } from '../../trainer/test-support/fixture.js';
import { runCli } from '../test-support/run-cli.js';
import { startServeProcess } from '../test-support/serve-process.js';

/**
 * A run trained on a task defined in code is served and exported from the command line, given
 * the same module again (`--task-module`), as `teamtr eval` takes it.
 */
let directory: string;
let runDirectory: string;
let taskModule: string;

before(async () => {
  const fixture = await createTrainingFixture();
  directory = fixture.directory;
  const jsonl = fixture.config.task as { path: string; roles: unknown };
  const lines = readFileSync(jsonl.path, 'utf8')
    .trim()
    .split('\n')
    .map(
      (line) => JSON.parse(line) as { id: string; prompt: string; answer: string; split: string },
    );
  const problems = (split: string) =>
    lines
      .filter((line) => line.split === split)
      .map(({ id, prompt, answer }) => ({ id, prompt, answer }));
  taskModule = path.join(directory, 'task.mjs');
  writeFileSync(
    taskModule,
    `export default { name: 'echo-answer', maxTurnChars: 2, roles: ${JSON.stringify(jsonl.roles)},\n` +
      `  problems: ${JSON.stringify({ train: problems('train'), eval: problems('eval') })},\n` +
      `  reward: ({ problem, answer }) => (answer === problem.answer ? 1 : 0) };\n`,
  );
  const config = { ...fixture.config, budget: { generatedTokens: 100_000, maxStages: 1 } };
  delete config.task;
  const configPath = path.join(directory, 'team.json');
  writeFileSync(configPath, JSON.stringify(config));
  runDirectory = path.join(directory, 'run');
  const trained = await runCli([
    'train',
    '--config',
    configPath,
    '--task-module',
    taskModule,
    '--run-dir',
    runDirectory,
  ]);
  assert.equal(trained.code, 0, trained.stderr);
});
after(() => rmSync(directory, { recursive: true, force: true }));

describe('a run whose task is defined in code, from the command line', () => {
  test('teamtr serve RUN --task-module FILE serves its team', async () => {
    const without = await runCli(['serve', runDirectory, '--port', '0']);
    assert.notEqual(without.code, 0);
    assert.match(without.stderr, /--task-module FILE/);
    const server = await startServeProcess(
      ['serve', runDirectory, '--task-module', taskModule, '--port', '0'],
      /listening on (http:\/\/127\.0\.0\.1:\d+\/v1) \(models: ([^)]*)\)/,
    );
    try {
      assert.equal(server.match[2], 'agent0, agent1, agent2, team');
      const response = await fetch(`${server.match[1]}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'team', messages: [{ role: 'user', content: 'ab' }] }),
      });
      assert.equal(response.status, 200);
      const body = (await response.json()) as {
        teamtr?: unknown;
        choices: Array<{ teamtr: { turns: unknown[] } }>;
      };
      assert.equal(body.choices[0]!.teamtr.turns.length, 3);
    } finally {
      assert.equal(await server.stop(), 0, server.stderr());
    }
  });

  test('teamtr export RUN --task-module FILE writes an agent', async () => {
    const out = path.join(directory, 'exported');
    const exported = await runCli([
      'export',
      runDirectory,
      '--task-module',
      taskModule,
      '--agent',
      'agent1',
      '--out',
      out,
      '--json',
    ]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(JSON.parse(exported.stdout).out, out);
    assert.ok(existsSync(path.join(out, 'config.json')));
  });
});
