import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { runBounded } from '../../util/test-support/bounded-child.js';
import { defineTask } from '../custom.js';
import { loadIsolatedTask, loaderArguments, TaskModuleError } from './isolated-task.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-isolated-task-'));
after(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;

const problems = {
  train: [
    { prompt: '1+1', answer: '2' },
    { prompt: '1+2', answer: '3' },
  ],
  eval: [{ prompt: '2+2', answer: '4' }],
};

/** An ES module task whose reward body is `reward`, with `top` before it; returns its path. */
function taskModule(reward: string, top = ''): string {
  const directory = path.join(root, `task-${counter++}`);
  mkdirSync(directory);
  const file = path.join(directory, 'task.mjs');
  writeFileSync(
    file,
    `${top}\nexport default { name: 'hostile', problems: ${JSON.stringify(problems)}, reward: ${reward} };\n`,
  );
  return file;
}

/** Runs `body` with limits small enough for a test (a hang must cost a second, not a minute). */
async function withLimits<T>(body: () => Promise<T>): Promise<T> {
  const saved = { ...process.env };
  Object.assign(process.env, { TEAMTR_TASK_CALL_MS: '1500', TEAMTR_TASK_LOAD_MS: '8000' });
  try {
    return await body();
  } finally {
    for (const key of ['TEAMTR_TASK_CALL_MS', 'TEAMTR_TASK_LOAD_MS']) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  }
}

/** Loads the module and scores its first train problem with `answer`. */
async function scoreOnce(file: string, answer = '2') {
  const task = await loadIsolatedTask(file, `--task-module ${path.basename(file)}`);
  try {
    const [problem] = task.split('train', { seed: 0 });
    return await task.verify(problem!, answer);
  } finally {
    await task.close();
  }
}

describe('task module code runs on a worker, under limits', () => {
  test('a well-behaved module scores exactly as the same task in-process', async () => {
    const reward = '({ problem, answer }) => (answer === problem.answer ? 1 : answer.length / 3)';
    const task = await loadIsolatedTask(taskModule(reward), '--task-module task.mjs');
    const local = defineTask({
      name: 'hostile',
      problems,
      reward: ({ problem, answer }) => (answer === problem.answer ? 1 : answer.length / 3),
    });
    try {
      assert.deepEqual(task.split('train', { seed: 3 }), local.split('train', { seed: 3 }));
      assert.deepEqual(task.protocol, local.protocol);
      for (const problem of local.split('train', { seed: 0 }))
        for (const answer of ['2', '3', 'xy', ''])
          assert.deepEqual(await task.verify(problem, answer), await local.verify(problem, answer));
    } finally {
      await task.close();
    }
  });

  test('a reward that never settles, or loops forever, is cut at the call limit', async () => {
    await withLimits(async () => {
      await assert.rejects(
        scoreOnce(taskModule('() => new Promise(() => {})')),
        /(the reward function did not settle on problem "[^"]+" within 1,500 ms|scoring problem "[^"]+" did not finish within 1,500 ms) \(TEAMTR_TASK_CALL_MS raises it\)/,
      );
      await assert.rejects(
        scoreOnce(taskModule('() => { for (;;) {} }')),
        /--task-module task\.mjs: scoring problem "[^"]+" did not finish within 1,500 ms \(TEAMTR_TASK_CALL_MS raises it\): a reward that never settles, or a loop that never ends\?/,
      );
    });
  });

  test('a module-level await that never settles stops loading with a clear error', async () => {
    await withLimits(async () => {
      await assert.rejects(
        scoreOnce(taskModule('() => 1', 'await new Promise(() => {});')),
        /--task-module task\.mjs: its worker stopped before the module finished loading \(exit code \d+\): a module-level await that never settles/,
      );
      await assert.rejects(
        scoreOnce(
          taskModule('() => 1', 'setInterval(() => {}, 1000); await new Promise(() => {});'),
        ),
        (error: unknown) =>
          error instanceof TaskModuleError &&
          /did not finish loading within 8 s/.test(error.message),
      );
    });
  });

  test('process.exit inside a reward ends only the worker', async () => {
    await assert.rejects(
      scoreOnce(taskModule('() => process.exit(0)')),
      /--task-module task\.mjs: its worker stopped \(exit code 0\): the module called process\.exit\(0\).* \(while scoring problem "[^"]+"\)/,
    );
  });

  test('rejections with undefined, a BigInt or a throwing getter are described, not crashed on', async () => {
    await assert.rejects(
      scoreOnce(taskModule('async () => { throw undefined; }')),
      /threw on problem "[^"]+": a non-Error value: undefined/,
    );
    await assert.rejects(
      scoreOnce(taskModule('() => Promise.reject(10n)')),
      /threw on problem "[^"]+": a non-Error value: 10n \(a BigInt\)/,
    );
    await assert.rejects(
      scoreOnce(taskModule("() => { throw { get message() { throw new Error('nested'); } }; }")),
      /threw on problem "[^"]+": an error whose message cannot be read/,
    );
  });

  test('a stray rejection or a throw in a timer stops the worker, not the process', async () => {
    for (const stray of [
      "() => { Promise.reject(new Error('stray one')); return 1; }",
      "() => { setTimeout(() => { throw new Error('late one'); }, 0); return new Promise((resolve) => setTimeout(() => resolve(1), 50)); }",
    ]) {
      const task = await loadIsolatedTask(taskModule(stray), '--task-module task.mjs');
      const [problem] = task.split('train', { seed: 0 });
      const outcome = await Promise.resolve(task.verify(problem!, '2'))
        .then(() => task.verify(problem!, '2'))
        .catch((error: unknown) => error);
      assert.ok(outcome instanceof TaskModuleError, String(outcome));
      assert.match(
        outcome.message,
        /the module threw outside a call it was answering — a stray rejection, or a throw in a timer or callback: (stray|late) one/,
      );
      await task.close();
    }
  });

  test('a ten-million-element return is refused in a few words', async () => {
    await assert.rejects(
      scoreOnce(taskModule('() => new Array(10_000_000).fill(1)')),
      (error: unknown) =>
        error instanceof TaskModuleError &&
        error.message.length < 400 &&
        /the reward function returned an array of 10000000 items on problem/.test(error.message),
    );
  });

  test('an idle worker does not keep the process alive', async () => {
    const file = taskModule('({ problem, answer }) => (answer === problem.answer ? 1 : 0)');
    const result = await runBounded({
      setup: `const { loadIsolatedTask } = await import(${JSON.stringify(new URL('./isolated-task.ts', import.meta.url).href)});`,
      body: `const task = await loadIsolatedTask(${JSON.stringify(file)}, 'task'); const [problem] = task.split('train', { seed: 0 }); console.log((await task.verify(problem, '2')).reward);`,
      milliseconds: 10_000,
    });
    assert.equal(result.exceeded, null, 'the process must end on its own');
    assert.equal(result.stdout.trim(), '1');
  });

  test("the worker keeps the caller's loaders and drops flags only a main script takes", () => {
    assert.deepEqual(
      loaderArguments(['--import', 'tsx', '--input-type=module', '-e', 'code', '--require=x']),
      ['--import', 'tsx', '--require=x'],
    );
  });
});
