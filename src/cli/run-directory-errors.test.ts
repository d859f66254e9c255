import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { createTrainingFixture } from '../trainer/test-support/fixture.js';
import { trainFirstStage } from '../trainer/test-support/run-files.js';
import { runLockFile } from '../trainer/run/run-lock.js';
import {
  canCreateIn,
  readOnlyDirectory,
  type ReadOnlyDirectory,
} from '../util/test-support/read-only-directory.js';
import { runCli } from './test-support/run-cli.js';

const cleanup: Array<() => void> = [];
after(() => cleanup.reverse().forEach((clean) => clean()));

let fixture: Awaited<ReturnType<typeof createTrainingFixture>>;
let configPath: string;
/** A real run interrupted after its first stage. */
let trained: string;
/** Copies of it on a disk nobody may write to: one as left, two with crash leftovers. */
let readOnly: ReadOnlyDirectory;

/** A pid no process has: a child that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

before(async () => {
  fixture = await createTrainingFixture();
  cleanup.push(() => rmSync(fixture.directory, { recursive: true, force: true }));
  const config = {
    ...fixture.config,
    checkpointEvery: 1,
    budget: { generatedTokens: 100_000, maxStages: 2 },
  };
  configPath = path.join(fixture.directory, 'team.json');
  writeFileSync(configPath, JSON.stringify(config));
  trained = path.join(fixture.directory, 'run');
  await trainFirstStage(config, trained);
  // What a trainer killed in the middle of a checkpoint leaves: a half-filled temp copy, or
  // (between its two renames) the previous checkpoint moved aside and none in place.
  const pid = await deadPid();
  const withTemp = path.join(fixture.directory, 'with-temp');
  const withAside = path.join(fixture.directory, 'with-aside');
  cpSync(trained, withTemp, { recursive: true });
  mkdirSync(path.join(withTemp, `.checkpoint.tmp-${pid}-0a1b2c3d4e5f`, 'units'), {
    recursive: true,
  });
  cpSync(trained, withAside, { recursive: true });
  renameSync(
    path.join(withAside, 'checkpoint'),
    path.join(withAside, `.checkpoint.old-${pid}-0a1b2c3d4e5f`),
  );
  readOnly = readOnlyDirectory({ run: trained, 'with-temp': withTemp, 'with-aside': withAside });
  cleanup.push(() => readOnly.remove());
});

/** A clear error: exit code 2, `message` on stderr, no stack trace. */
function assertClearError(result: { code: number; stderr: string }, message: RegExp): void {
  assert.equal(result.code, 2, result.stderr);
  assert.match(result.stderr, message);
  assert.doesNotMatch(result.stderr, /internal error|\n\s+at /);
}

function skipUnlessReadOnly(t: TestContext): boolean {
  if (canCreateIn(readOnly.path)) {
    t.skip(
      'this process may write anywhere (root without the right to mount), so no directory is read-only to it',
    );
    return true;
  }
  return false;
}

describe('run directories that cannot be made or written: clear errors, exit 2', () => {
  test('a run-dir name longer than the file system allows', async () => {
    const runDirectory = path.join(fixture.directory, 'x'.repeat(300));
    assertClearError(
      await runCli(['train', '-c', configPath, '--run-dir', runDirectory]),
      /cannot create run directory .*x{300}: a name in it is longer than the file system allows \(300 bytes.*; choose a shorter --run-dir$/m,
    );
  });

  test('a run-dir whose parent is a file', async () => {
    assertClearError(
      await runCli(['train', '-c', configPath, '--run-dir', path.join(configPath, 'run')]),
      new RegExp(
        `cannot create run directory .*: ${configPath.replace(/[.]/g, '\\.')} is a file, not a directory; choose another --run-dir$`,
        'm',
      ),
    );
  });

  test('a new run on a read-only disk', async (t) => {
    if (skipUnlessReadOnly(t)) return;
    const runDirectory = path.join(readOnly.path, 'new', 'run');
    assertClearError(
      await runCli(['train', '-c', configPath, '--run-dir', runDirectory]),
      new RegExp(
        `cannot create run directory ${runDirectory}: ${readOnly.path} is on a ${readOnly.refusal}|permission to write in ${readOnly.path} is denied`,
      ),
    );
  });

  test('`report` into a read-only run names the directory and the cause', async (t) => {
    if (skipUnlessReadOnly(t)) return;
    const run = path.join(readOnly.path, 'run');
    assertClearError(
      await runCli(['report', run]),
      new RegExp(`(read-only|permission denied) \\(${path.join(run, 'report')}\\)`),
    );
  });

  test('a new run into a run with a checkpoint, or a resume of a directory that is no run: the remedy in flags', async () => {
    assertClearError(
      await runCli(['train', '-c', configPath, '--run-dir', trained]),
      /holds a run with a checkpoint; continue it with --resume, or choose another --run-dir$/m,
    );
    assertClearError(
      await runCli(['train', '--resume', '--run-dir', fixture.directory]),
      /RunDirectoryError: .*not a teamtr run directory \(no teamtr-run\.json\); pass a directory `teamtr train` wrote$/m,
    );
  });

  test('`serve` and `eval` of a file', async () => {
    for (const command of ['serve', 'eval'])
      assertClearError(
        await runCli([command, configPath]),
        /team\.json is a file, not a run directory; pass a directory `teamtr train` wrote/,
      );
  });
});

describe('reading a run changes nothing in it', () => {
  test('`eval` of a read-only run holding a crash leftover evaluates it, leftover and all', async (t) => {
    if (skipUnlessReadOnly(t)) return;
    for (const copy of ['with-temp', 'with-aside']) {
      const result = await runCli(['eval', path.join(readOnly.path, copy), '--json']);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(typeof JSON.parse(result.stdout).accuracy, 'number');
    }
    assert.ok(existsSync(path.join(readOnly.path, 'with-temp', 'checkpoint')));
  });
});

describe('a lock naming a process that is not the trainer', () => {
  test('a running.json whose PID now belongs to another live process does not block --resume', async () => {
    const runDirectory = path.join(fixture.directory, 'reused-pid');
    cpSync(trained, runDirectory, { recursive: true });
    // PID 1 is always alive; the lock says its holder started at another time.
    writeFileSync(
      path.join(runDirectory, runLockFile),
      JSON.stringify({
        pid: 1,
        host: hostname(),
        startedAt: new Date().toISOString(),
        heartbeatAt: new Date().toISOString(),
        processStart: '1',
        token: 'another',
      }),
    );
    const result = await runCli(['train', '--resume', '--run-dir', runDirectory]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(existsSync(path.join(runDirectory, runLockFile)), false);
    assert.equal(
      JSON.parse(readFileSync(path.join(runDirectory, 'summary.json'), 'utf8')).stages,
      2,
    );
  });
});
