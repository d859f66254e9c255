import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import type { TaskDefinition } from '../../tasks/index.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { train } from '../trainer.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

/** The fixture's team and budget, with its JSONL task replaced by one written in code. */
async function codeTaskFixture(reward: TaskDefinition['reward']) {
  const fixture = await createTrainingFixture();
  cleanup.push(fixture.directory);
  const jsonl = fixture.config.task as {
    path: string;
    roles: Array<{ name: string; prompt: string }>;
  };
  const lines = readFileSync(jsonl.path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  const problems = (split: string) =>
    lines
      .filter((line) => line.split === split)
      .map(({ id, prompt, answer }) => ({ id, prompt, answer }));
  const definition: TaskDefinition = {
    name: 'echo-answer',
    problems: { train: problems('train'), eval: problems('eval') },
    reward,
    roles: jsonl.roles,
    maxTurnChars: 2,
  };
  const config = { ...fixture.config };
  delete config.task;
  return {
    directory: fixture.directory,
    definition,
    config: { ...config, budget: { generatedTokens: 100_000, maxStages: 2 } },
  };
}

describe('tasks and rewards written in code', () => {
  test('train() takes a task with an async TypeScript reward, and resume needs the same task', async () => {
    const seen: string[] = [];
    const { directory, definition, config } = await codeTaskFixture(async ({ problem, answer }) => {
      seen.push(problem.id);
      await new Promise((resolve) => setImmediate(resolve));
      return { reward: answer === problem.answer ? 1 : 0, details: { explanation: 'exact' } };
    });
    const runDirectory = path.join(directory, 'run');
    const controller = new AbortController();
    const summary = await train({
      config,
      task: definition,
      runDirectory,
      signal: controller.signal,
      onProgress: (event) => {
        if (event.kind === 'stage') controller.abort();
      },
    });
    assert.equal(summary.stages, 1);
    assert.ok(seen.length > 0, 'the reward function scored the rollouts');
    const saved = JSON.parse(readFileSync(path.join(runDirectory, 'config.json'), 'utf8'));
    assert.deepEqual(saved.task, { name: 'code', task: 'echo-answer' });
    assert.match(saved.taskFingerprint, /^[0-9a-f]{64}$/);
    await assert.rejects(
      train({ config: {}, runDirectory, resume: true }),
      /task "echo-answer" is defined in code: pass it again/,
    );
    const changed = {
      ...definition,
      problems: { ...definition.problems, eval: definition.problems.eval.slice(1) },
    };
    await assert.rejects(
      train({ config: {}, runDirectory, resume: true, task: changed }),
      /the data of task "echo-answer" changed since this run began/,
    );
    const resumed = await train({ config: {}, runDirectory, resume: true, task: definition });
    assert.equal(resumed.stages, 2);
  });

  test('a reward function that throws or returns a non-number is a clear error; the directory stays usable', async () => {
    const { directory, definition, config } = await codeTaskFixture(() => {
      throw new Error('checker crashed');
    });
    const runDirectory = path.join(directory, 'run');
    await assert.rejects(
      train({ config, task: definition, runDirectory }),
      /task "echo-answer": the reward function threw on problem "[^"]+": checker crashed/,
    );
    await assert.rejects(
      train({ config, task: { ...definition, reward: () => Number.NaN }, runDirectory }),
      /the reward function returned NaN on problem "[^"]+"; it must return a number in \[0, 1\]/,
    );
    await assert.rejects(
      train({ config, task: { ...definition, reward: () => 2 }, runDirectory }),
      /returned 2 on problem/,
    );
    const summary = await train({ config, task: { ...definition, reward: () => 1 }, runDirectory });
    assert.equal(summary.stages, 2);
  });

  test('a task in the config and one in code at once is refused', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const { definition } = await codeTaskFixture(() => 0);
    await assert.rejects(
      train({
        config: fixture.config,
        task: definition,
        runDirectory: path.join(fixture.directory, 'run'),
      }),
      /a task is given both in the config and in code/,
    );
  });

  test('a JSONL dataset edited after the run began is refused on resume', async () => {
    const fixture = await createTrainingFixture();
    cleanup.push(fixture.directory);
    const runDirectory = path.join(fixture.directory, 'run');
    await train({ config: fixture.config, runDirectory, signal: AbortSignal.abort() });
    const dataset = (fixture.config.task as { path: string }).path;
    writeFileSync(dataset, readFileSync(dataset, 'utf8').replace('"p3"', '"p3x"'));
    await assert.rejects(
      train({ config: {}, runDirectory, resume: true }),
      /the data of task "jsonl" changed since this run began/,
    );
  });

  test('teamtr train --task-module loads a TypeScript module', async () => {
    const { directory, definition, config } = await codeTaskFixture(() => 0);
    const modulePath = path.join(directory, 'task.ts');
    writeFileSync(
      modulePath,
      `const problems = ${JSON.stringify(definition.problems)};\n` +
        `export default { name: 'from-module', problems, roles: ${JSON.stringify(definition.roles)}, maxTurnChars: 2,\n` +
        `  reward: ({ problem, answer }: { problem: { answer: string }; answer: string }): number => (answer === problem.answer ? 1 : 0) };\n`,
    );
    const configPath = path.join(directory, 'team.json');
    writeFileSync(configPath, JSON.stringify(config));
    const mainModule = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
    const runDirectory = path.join(directory, 'run');
    const argv = [
      'train',
      '--config',
      configPath,
      '--task-module',
      modulePath,
      '--run-dir',
      runDirectory,
      '--json',
    ];
    const script = `const { main } = await import(${JSON.stringify(mainModule)}); process.exitCode = await main(${JSON.stringify(argv)});`;
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        { env: { ...process.env, TEAMTR_QUIET_BACKEND: '1' } },
        (error, stdout, stderr) =>
          resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      ),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).stages, 2);
    const saved = JSON.parse(readFileSync(path.join(runDirectory, 'config.json'), 'utf8'));
    assert.deepEqual(saved.task, { name: 'code', task: 'from-module' });
  });

  test('a task in code with no agents asks for a model per role, and leaves no run behind', async () => {
    const { directory, definition, config } = await codeTaskFixture(() => 0);
    const withoutAgents = { ...config };
    delete withoutAgents.agents;
    const runDirectory = path.join(directory, 'no-agents');
    await assert.rejects(
      train({ config: withoutAgents, task: definition, runDirectory }),
      /agents: task "echo-answer" has no built-in models .*give a model per role \(r0, r1, r2\)/,
    );
    assert.equal(existsSync(runDirectory), false);
  });
});
