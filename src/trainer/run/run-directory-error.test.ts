import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { HeldRun, RunDirectory } from './run-directory.js';
import { libraryRemedies, RunDirectoryError } from './run-directory-error.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'teamtr-run-error-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const flag = /--(run-dir|resume|endpoint|force|out)\b|`teamtr [a-z]/;

test('the run room speaks the library’s terms: no CLI flag or command in its code', () => {
  const room = path.dirname(fileURLToPath(import.meta.url));
  const found: string[] = [];
  for (const file of readdirSync(room).filter((name) => /(?<!\.test)\.ts$/.test(name)))
    readFileSync(path.join(room, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        const code = line.trim();
        if (code.startsWith('*') || code.startsWith('/*') || code.startsWith('//')) return;
        if (flag.test(code)) found.push(`${file}:${index + 1}: ${code}`);
      });
  assert.deepEqual(found, []);
  for (const wording of Object.values(libraryRemedies)) assert.doesNotMatch(wording, flag);
});

async function caught(attempt: Promise<unknown>): Promise<RunDirectoryError> {
  const error = await attempt.then(
    () => assert.fail('accepted'),
    (reason: unknown) => reason,
  );
  assert.ok(error instanceof RunDirectoryError, String(error));
  return error;
}

test('a run directory that cannot be used is a RunDirectoryError: path, problem and remedy', async () => {
  const foreign = path.join(scratch, 'foreign');
  mkdirSync(foreign);
  writeFileSync(path.join(foreign, 'notes.txt'), 'mine');
  const notEmpty = await caught(HeldRun.create(foreign, {}));
  assert.equal(notEmpty.path, foreign);
  assert.equal(notEmpty.remedy, 'anotherDirectory');
  assert.equal(
    notEmpty.message,
    `run directory ${foreign} is not empty; choose another run directory`,
  );

  const file = path.join(foreign, 'notes.txt');
  const aFile = await caught(RunDirectory.open(file));
  assert.equal(aFile.remedy, 'givenRunDirectory');
  assert.match(
    aFile.message,
    /is a file, not a run directory; give a directory that `train` wrote/,
  );

  const parentIsFile = await caught(HeldRun.create(path.join(file, 'run'), {}));
  assert.equal(parentIsFile.remedy, 'anotherDirectory');
  assert.match(parentIsFile.problem, /notes\.txt is a file, not a directory$/);

  const tooLong = await caught(HeldRun.create(path.join(scratch, 'x'.repeat(300)), {}));
  assert.equal(tooLong.remedy, 'shorterPath');

  const started = path.join(scratch, 'started');
  (await HeldRun.create(started, { seed: 1 })).release();
  const noCheckpoint = await caught(
    RunDirectory.open(started).then((run) => run.restoreCheckpoint([])),
  );
  assert.equal(noCheckpoint.remedy, 'startWithoutResume');
});
