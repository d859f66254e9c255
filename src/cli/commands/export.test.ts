import assert from 'node:assert/strict';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import YAML from 'yaml';
import { createTrainingFixture } from '../../trainer/test-support/fixture.js';
import { runCli } from '../test-support/run-cli.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

test('a run trained on a task in code exports from the CLI, given the same module', async () => {
  const fixture = await createTrainingFixture();
  cleanup.push(fixture.directory);
  const jsonl = fixture.config.task as { path: string; roles: unknown };
  const problems = readFileSync(jsonl.path, 'utf8')
    .trim()
    .split('\n')
    .map(
      (line) => JSON.parse(line) as { id: string; prompt: string; answer: string; split: string },
    );
  const split = (name: string) =>
    problems
      .filter((problem) => problem.split === name)
      .map(({ id, prompt, answer }) => ({ id, prompt, answer }));
  const modulePath = path.join(fixture.directory, 'task.mjs');
  writeFileSync(
    modulePath,
    `export default ${JSON.stringify({
      name: 'echo',
      problems: { train: split('train'), eval: split('eval') },
      roles: jsonl.roles,
      maxTurnChars: 2,
    }).slice(0, -1)}, reward: ({ problem, answer }) => (answer === problem.answer ? 1 : 0) };\n`,
  );
  const config = { ...fixture.config };
  delete config.task;
  const configPath = path.join(fixture.directory, 'team.yaml');
  writeFileSync(configPath, YAML.stringify(config));
  const runDirectory = path.join(fixture.directory, 'run');
  const trained = await runCli([
    'train',
    '--config',
    configPath,
    '--task-module',
    modulePath,
    '--run-dir',
    runDirectory,
    '--budget-max-stages',
    '1',
    '--json',
  ]);
  assert.equal(trained.code, 0, trained.stderr);
  const out = path.join(fixture.directory, 'exported');
  const without = await runCli(['export', runDirectory, '--agent', 'agent0', '--out', out]);
  assert.equal(without.code, 2);
  assert.match(without.stderr, /defined in code: pass it again .*--task-module FILE/);
  const exported = await runCli([
    'export',
    runDirectory,
    '--agent',
    'agent0',
    '--task-module',
    modulePath,
    '--out',
    out,
    '--json',
  ]);
  assert.equal(exported.code, 0, exported.stderr);
  assert.ok(readdirSync(out).includes('model.safetensors'));
});
