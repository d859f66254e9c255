import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTrainingFixture } from '../test-support/fixture.js';
import {
  comparableRecords,
  directorySnapshot,
  trainFirstStage,
} from '../test-support/run-files.js';
import { train } from '../trainer.js';
import { openRun } from '../open-run.js';
import { scheduleSwap } from '../schedule-swap.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

/**
 * A real run interrupted after its first stage (checkpoint, summary and all), kept pristine;
 * every test works on a copy.
 */
let pristine: string;
let scratch: string;
let fixtureConfig: Awaited<ReturnType<typeof createTrainingFixture>>['config'];
before(async () => {
  const fixture = await createTrainingFixture();
  cleanup.push(fixture.directory);
  fixtureConfig = {
    ...fixture.config,
    checkpointEvery: 1,
    budget: { generatedTokens: 100_000, maxStages: 2 },
  };
  pristine = path.join(fixture.directory, 'pristine');
  await trainFirstStage(fixtureConfig, pristine);
  scratch = mkdtempSync(path.join(os.tmpdir(), 'teamtr-integrity-'));
  cleanup.push(scratch);
});

let copies = 0;
function copyOfRun(): string {
  const copy = path.join(scratch, `run-${copies++}`);
  cpSync(pristine, copy, { recursive: true });
  return copy;
}

const resume = (runDirectory: string) => train({ config: {}, runDirectory, resume: true });

/** Resume is refused with an error naming `file`, and leaves every file as it was. */
async function assertRefused(runDirectory: string, file: string, reason?: RegExp): Promise<void> {
  const before = directorySnapshot(runDirectory);
  const error = await resume(runDirectory).then(
    () => assert.fail(`resume accepted the run with ${path.relative(runDirectory, file)} changed`),
    (caught: unknown) => caught as Error,
  );
  assert.ok(['FileFormatError', 'RunDirectoryError'].includes(error.name), error.stack);
  assert.ok(error.message.startsWith(`${file}: `), error.message);
  if (reason) assert.match(error.message, reason);
  assert.deepEqual(directorySnapshot(runDirectory), before, 'a refused resume changes nothing');
}

function editJson<Value>(file: string, edit: (value: Value) => void): void {
  const value = JSON.parse(readFileSync(file, 'utf8')) as Value;
  edit(value);
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** The parts of state.json and config.json the tests edit. */
interface SavedState {
  stage: number;
  metricsBytes: number;
  evaluationBefore: { accuracy: number };
  integrity?: { runFiles: Record<string, unknown> };
}
interface SavedConfig {
  seed: number;
  optimizer: { learningRate: number };
}

describe('the integrity record covers every file resume reads', () => {
  test('one flipped byte anywhere in any file of a real run is refused, naming the file', async () => {
    const files = Object.keys(directorySnapshot(pristine)).sort();
    for (const expected of [
      'teamtr-run.json',
      'config.json',
      'metrics.jsonl',
      'summary.json',
      'checkpoint/state.json',
      'checkpoint/units/agent0/model.safetensors',
      'checkpoint/units/agent2/optimizer.json',
      'checkpoint/units/agent1/tokenizer.json',
    ])
      assert.ok(files.includes(expected), `the run holds ${expected} (it holds ${files})`);
    for (const relative of files) {
      const size = readFileSync(path.join(pristine, relative)).length;
      for (const position of new Set([0, Math.floor(size / 2), size - 1])) {
        const runDirectory = copyOfRun();
        const file = path.join(runDirectory, relative);
        const bytes = readFileSync(file);
        bytes[position]! ^= 0x01;
        writeFileSync(file, bytes);
        await assertRefused(runDirectory, file);
        rmSync(runDirectory, { recursive: true });
      }
    }
  });

  test('an edited stage, evaluation or record in state.json is refused, as is a removed record', async () => {
    const edits: Array<[(state: SavedState) => void, RegExp]> = [
      [(state) => (state.stage += 1), /edited or damaged after it was saved/],
      [(state) => (state.evaluationBefore.accuracy = 0.99), /edited or damaged/],
      [(state) => (state.metricsBytes -= 1), /edited or damaged/],
      [(state) => delete state.integrity, /holds no integrity record/],
      [(state) => delete state.integrity!.runFiles['config.json'], /edited or damaged/],
    ];
    for (const [edit, reason] of edits) {
      const runDirectory = copyOfRun();
      const statePath = path.join(runDirectory, 'checkpoint', 'state.json');
      editJson(statePath, edit);
      await assertRefused(runDirectory, statePath, reason);
    }
    const reformatted = copyOfRun();
    const statePath = path.join(reformatted, 'checkpoint', 'state.json');
    writeFileSync(statePath, JSON.stringify(JSON.parse(readFileSync(statePath, 'utf8'))));
    await assertRefused(reformatted, statePath, /its text is not as teamtr wrote it/);
  });

  test('an edited seed or learning rate in config.json is refused, saying how settings change', async () => {
    for (const edit of [
      (config: SavedConfig) => (config.seed += 1),
      (config: SavedConfig) => (config.optimizer.learningRate *= 10),
    ]) {
      const runDirectory = copyOfRun();
      const configPath = path.join(runDirectory, 'config.json');
      editJson(configPath, edit);
      await assertRefused(
        runDirectory,
        configPath,
        /does not match the checksum.*a changed setting.*`scheduleSwap` and `train` with `resume: true` and `endpoints`/,
      );
    }
  });

  test('a deleted state.json is refused, never a fresh start over the checkpoint', async () => {
    const runDirectory = copyOfRun();
    const statePath = path.join(runDirectory, 'checkpoint', 'state.json');
    rmSync(statePath);
    await assertRefused(runDirectory, statePath, /missing.*not started over/);
    const snapshot = directorySnapshot(runDirectory);
    await assert.rejects(
      train({ config: fixtureConfig, runDirectory }),
      /holds a run with a checkpoint; continue it with `resume: true`/,
    );
    assert.deepEqual(directorySnapshot(runDirectory), snapshot);
  });

  test('a file added to the checkpoint, or a deleted checkpoint under a summary, is refused', async () => {
    const added = copyOfRun();
    const extra = path.join(added, 'checkpoint', 'units', 'agent0', 'extra.json');
    writeFileSync(extra, '{"step": 99}\n');
    await assertRefused(added, extra, /is not one of the \d+ files the checkpoint was saved with/);

    const deleted = copyOfRun();
    rmSync(path.join(deleted, 'checkpoint'), { recursive: true });
    await assertRefused(deleted, path.join(deleted, 'checkpoint'), /missing, though summary\.json/);
  });

  test('a deleted summary.json is written again; an edited one is refused, saying to delete it', async () => {
    const edited = copyOfRun();
    const summaryPath = path.join(edited, 'summary.json');
    editJson<{ stages: number }>(summaryPath, (summary) => (summary.stages = 99));
    await assertRefused(edited, summaryPath, /delete it, then run the command again/);
    rmSync(summaryPath);
    assert.equal((await resume(edited)).stages, 2);
  });

  test('a FIFO or a device in place of a run file is refused at once, never read', async () => {
    const fifo = copyOfRun();
    const configPath = path.join(fifo, 'config.json');
    rmSync(configPath);
    execFileSync('mkfifo', [configPath]);
    await assertRefused(fifo, configPath, /is a named pipe \(FIFO\), not a regular file/);
    const device = copyOfRun();
    const summaryPath = path.join(device, 'summary.json');
    rmSync(summaryPath);
    symlinkSync('/dev/zero', summaryPath);
    await assertRefused(device, summaryPath, /is a character device/);
  });

  test('every command that loads the run verifies it (eval, serve, export read through openRun)', async () => {
    const runDirectory = copyOfRun();
    const configPath = path.join(runDirectory, 'config.json');
    editJson<SavedConfig>(configPath, (config) => (config.seed = 7));
    await assert.rejects(openRun(runDirectory), (error: Error) =>
      error.message.startsWith(`${configPath}: the file does not match`),
    );
  });
});

describe('settings changed through a command are recorded, and the run resumes as recorded', () => {
  test('a swap scheduled by `teamtr swap` is recorded; the run resumes with it, and undoing it by hand is refused', async () => {
    const runDirectory = copyOfRun();
    const configPath = path.join(runDirectory, 'config.json');
    const before = readFileSync(configPath, 'utf8');
    const agent0 = (fixtureConfig.agents as Array<{ model: string }>)[0]!.model;
    await scheduleSwap({ runDirectory, agent: 'agent1', model: agent0 });
    assert.notEqual(readFileSync(configPath, 'utf8'), before);
    const edited = path.join(scratch, 'swap-undone-by-hand');
    cpSync(runDirectory, edited, { recursive: true });
    writeFileSync(path.join(edited, 'config.json'), before);
    await assertRefused(edited, path.join(edited, 'config.json'));
    const summary = await resume(runDirectory);
    assert.equal(summary.stages, 2);
    assert.ok(
      comparableRecords(runDirectory).some(
        (record) => (record as { type: string }).type === 'swap',
      ),
    );
  });

  test('a resumed run ends bit-identical to an uninterrupted one, and its end is recorded', async () => {
    const runDirectory = copyOfRun();
    await resume(runDirectory);
    const whole = path.join(scratch, 'whole');
    await train({ config: fixtureConfig, runDirectory: whole });
    assert.deepEqual(comparableRecords(runDirectory), comparableRecords(whole));
    const state = JSON.parse(
      readFileSync(path.join(runDirectory, 'checkpoint', 'state.json'), 'utf8'),
    );
    assert.deepEqual(Object.keys(state.integrity.runFiles).sort(), [
      'config.json',
      'summary.json',
      'teamtr-run.json',
    ]);
    for (const accepted of Object.values(state.integrity.runFiles))
      assert.equal((accepted as unknown[]).length, 1, 'one version of each file once written');
    // The summary of the first, interrupted end no longer verifies.
    writeFileSync(
      path.join(runDirectory, 'summary.json'),
      readFileSync(path.join(pristine, 'summary.json')),
    );
    await assertRefused(runDirectory, path.join(runDirectory, 'summary.json'));
  });
});
