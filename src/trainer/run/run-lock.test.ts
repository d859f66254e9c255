import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { scheduleSwap } from '../schedule-swap.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { train } from '../trainer.js';
import { holdRun, isRunActive, processStartTime, runLockFile } from './run-lock.js';

let fixture: Awaited<ReturnType<typeof createTrainingFixture>>;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'teamtr-run-lock-'));
before(async () => {
  fixture = await createTrainingFixture();
});
after(() => {
  rmSync(fixture.directory, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

const oneStage = () => ({
  ...fixture.config,
  budget: { generatedTokens: 100_000, maxStages: 1 },
  evaluation: { problems: 4, every: 1 },
  checkpointEvery: 1,
});

/** A child process that sleeps until killed; its pid is alive, and it is not a trainer. */
function sleeper(): ChildProcess {
  return spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
}

function writeLock(directory: string, fields: Record<string, unknown>): void {
  writeFileSync(
    path.join(directory, runLockFile),
    JSON.stringify({
      host: hostname(),
      startedAt: 'x',
      heartbeatAt: new Date().toISOString(),
      ...fields,
    }),
  );
}

describe('the run lock (running.json)', () => {
  test('two trainers started together on one run directory: exactly one runs, every time', async () => {
    for (let attempt = 0; attempt < 4; attempt++) {
      const runDirectory = path.join(scratch, `together-${attempt}`);
      const outcomes = await Promise.allSettled([
        train({ config: oneStage(), runDirectory }),
        train({ config: oneStage(), runDirectory }),
      ]);
      const ran = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      assert.equal(ran.length, 1, `attempt ${attempt}: ${ran.length} trainers ran`);
      const refused = outcomes.find((outcome) => outcome.status === 'rejected')!;
      assert.match(String(refused.reason), /is being trained by process \d+/);
      const lines = readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8').trim();
      assert.equal(lines.split('\n').filter((line) => line.includes('"type":"stage"')).length, 1);
      assert.ok(
        !existsSync(path.join(runDirectory, runLockFile)),
        'the lock is gone after the run',
      );
    }
  });

  test('two processes taking one lock at the same instant: exactly one holds it, every time', async () => {
    const lockModule = fileURLToPath(new URL('./run-lock.ts', import.meta.url));
    const contender = (directory: string) => {
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          `const { holdRun } = await import(${JSON.stringify(lockModule)});
           process.stdout.write('ready ');
           process.stdin.once('data', async (go) => {
             while (Date.now() < Number(go));
             try {
               const lock = await holdRun(${JSON.stringify(directory)});
               process.stdout.write('held');
               setTimeout(() => { lock.release(); process.exit(0); }, 300);
             } catch (error) { process.stdout.write('refused ' + error.message); process.exit(0); }
           });`,
        ],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      );
      let output = '';
      const ready = new Promise<void>((resolve) =>
        child.stdout!.on('data', (chunk) => {
          output += chunk;
          if (output.startsWith('ready ')) resolve();
        }),
      );
      const done = new Promise<string>((resolve) =>
        child.on('exit', () => resolve(output.replace(/^ready /, ''))),
      );
      return { child, ready, done };
    };
    // Three attempts side by side, each two processes on a directory of its own.
    const attempts = [0, 1, 2].map((attempt) => {
      const directory = path.join(scratch, `processes-${attempt}`);
      mkdirSync(directory);
      return [contender(directory), contender(directory)];
    });
    await Promise.all(attempts.flat().map((entry) => entry.ready));
    // All start at one instant, a few milliseconds from now.
    const go = String(Date.now() + 20);
    attempts.flat().forEach((entry) => entry.child.stdin!.end(go));
    for (const contenders of attempts) {
      const outputs = await Promise.all(contenders.map((entry) => entry.done));
      assert.deepEqual(
        outputs.map((output) => output.split(' ')[0]).sort(),
        ['held', 'refused'],
        outputs.join(' | '),
      );
    }
  });

  test('a lock whose PID now belongs to a process that started at another time is stale', async () => {
    const directory = path.join(scratch, 'reused-pid');
    mkdirSync(directory);
    const other = sleeper();
    try {
      await new Promise((resolve) => other.once('spawn', resolve));
      const started = processStartTime(other.pid!);
      assert.ok(started, 'this system reports process start times (/proc)');
      writeLock(directory, { pid: other.pid, processStart: started });
      assert.equal(isRunActive(directory), true);
      await assert.rejects(holdRun(directory), new RegExp(`being trained by process ${other.pid}`));
      writeLock(directory, { pid: other.pid, processStart: `${started}0` });
      assert.equal(isRunActive(directory), false);
      const lock = await holdRun(directory);
      assert.equal(
        JSON.parse(readFileSync(path.join(directory, runLockFile), 'utf8')).pid,
        process.pid,
      );
      lock.release();
    } finally {
      other.kill();
    }
  });

  test('a running.json past 64 KiB is refused naming the file and the limit, never read whole or taken over', async () => {
    const directory = path.join(scratch, 'huge-lock');
    mkdirSync(directory);
    const lockFile = path.join(directory, runLockFile);
    writeFileSync(lockFile, 'x'.repeat(100 * 1024));
    const refusal = new RegExp(
      `${lockFile.replace(/[.]/g, '\\.')}: is 100 KiB; a run lock is at most 64 KiB; .*delete it and run again$`,
    );
    assert.throws(() => isRunActive(directory), refusal);
    await assert.rejects(holdRun(directory), refusal);
    assert.equal(readFileSync(lockFile, 'utf8').length, 100 * 1024, 'the file is left as it was');
  });

  test('a FIFO as running.json is refused at once, not waited on for a writer', () => {
    const directory = path.join(scratch, 'fifo-lock');
    mkdirSync(directory);
    const lockFile = path.join(directory, runLockFile);
    execFileSync('mkfifo', [lockFile]);
    // In a child: opening a FIFO without O_NONBLOCK blocks the whole process, timers and all.
    const lockModule = path.join(path.dirname(fileURLToPath(import.meta.url)), 'run-lock.ts');
    const child = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { holdRun } from ${JSON.stringify(lockModule)};
         await holdRun(${JSON.stringify(directory)}).catch((error) => console.log(error.message));`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(child.signal, null, 'the child finished without being killed for hanging');
    assert.match(child.stdout, /running\.json: is a named pipe \(FIFO\), not a regular file/);
  });

  test('a holder whose lock another process took refuses to go on, and leaves that lock alone', async () => {
    const directory = path.join(scratch, 'taken-over');
    mkdirSync(directory);
    const lock = await holdRun(directory);
    const other = sleeper();
    try {
      writeLock(directory, { pid: other.pid, token: 'another' });
      await assert.rejects(lock.beat(), /no longer names this trainer/);
      lock.release();
      assert.equal(
        JSON.parse(readFileSync(path.join(directory, runLockFile), 'utf8')).pid,
        other.pid,
      );
    } finally {
      other.kill();
    }
  });

  test('a swap is not scheduled into a run a trainer holds; its config.json is untouched', async () => {
    const runDirectory = path.join(scratch, 'swap-held');
    await train({ config: oneStage(), runDirectory });
    const configPath = path.join(runDirectory, 'config.json');
    const before = readFileSync(configPath, 'utf8');
    const other = sleeper();
    try {
      writeLock(runDirectory, { pid: other.pid });
      await assert.rejects(
        scheduleSwap({
          runDirectory,
          agent: 'agent1',
          model: path.join(fixture.directory, 'agent0'),
        }),
        new RegExp(`being trained by process ${other.pid}`),
      );
      assert.equal(readFileSync(configPath, 'utf8'), before);
    } finally {
      other.kill();
    }
  });
});
