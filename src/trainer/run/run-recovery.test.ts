import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  mkdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { describeRun } from '../../report/run-overview.js';
import { loadRuns } from '../../report/runs.js';
import { RunDirectory } from './run-directory.js';
import { runLockFile } from './run-lock.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import type { TrainProgress } from '../trainer.js';
import { train } from '../trainer.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

async function fixture() {
  const created = await createTrainingFixture();
  cleanup.push(created.directory);
  return {
    ...created,
    config: { ...created.config, budget: { generatedTokens: 100_000, maxStages: 2 } },
  };
}

/** A pid no process has: a child that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

describe('run directories left by interrupted or failed runs', () => {
  test('a run that stopped before its first checkpoint is started over by a plain run', async () => {
    const { directory, config } = await fixture();
    const runDirectory = path.join(directory, 'run');
    await RunDirectory.create(runDirectory, config); // marker, config, empty metrics: no checkpoint
    appendFileSync(path.join(runDirectory, 'metrics.jsonl'), '{"type":"eval","stage":0}\n');
    const summary = await train({ config, runDirectory });
    assert.equal(summary.stages, 2);
    const lines = readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8').trim().split('\n');
    assert.equal(lines.filter((line) => line.includes('"type":"eval","stage":0')).length, 1);
  });

  test('a kill while the directory was created (only a temp file, or only the marker) is recoverable', async () => {
    const { directory, config } = await fixture();
    const onlyTemp = path.join(directory, 'only-temp');
    mkdirSync(onlyTemp);
    writeFileSync(path.join(onlyTemp, `.config.json.tmp-${await deadPid()}-0a1b2c3d4e5f`), '{');
    await assert.rejects(
      train({ config: {}, runDirectory: onlyTemp, resume: true }),
      /stopped while its directory was being created.*start it again without `resume`/,
    );
    assert.equal((await train({ config, runDirectory: onlyTemp })).stages, 2);

    const onlyMarker = path.join(directory, 'only-marker');
    mkdirSync(onlyMarker);
    writeFileSync(
      path.join(onlyMarker, 'teamtr-run.json'),
      JSON.stringify({ format: 'teamtr-run', version: 1, createdAt: 'x' }),
    );
    await assert.rejects(
      train({ config: {}, runDirectory: onlyMarker, resume: true }),
      /stopped while its directory was being created/,
    );
    assert.equal((await train({ config, runDirectory: onlyMarker })).stages, 2);
  });

  test('a directory with a checkpoint, or with foreign files, is never cleared', async () => {
    const { directory, config } = await fixture();
    const runDirectory = path.join(directory, 'run');
    await train({ config, runDirectory });
    await assert.rejects(
      train({ config, runDirectory }),
      /holds a run with a checkpoint; continue it with `resume: true`/,
    );
    const foreign = path.join(directory, 'foreign');
    mkdirSync(foreign);
    writeFileSync(path.join(foreign, 'notes.txt'), 'mine');
    await assert.rejects(
      train({ config, runDirectory: foreign }),
      /is not empty; choose another run directory/,
    );
    assert.equal(readFileSync(path.join(foreign, 'notes.txt'), 'utf8'), 'mine');
  });
});

describe('resume verifies what the checkpoint vouches for', () => {
  async function trainedRun() {
    const { directory, config } = await fixture();
    const runDirectory = path.join(directory, 'run');
    await train({
      config: { ...config, checkpointEvery: 1 },
      runDirectory,
      signal: AbortSignal.abort(),
    });
    return { runDirectory, config };
  }

  async function interruptedAfterOneStage() {
    const { directory, config } = await fixture();
    const runDirectory = path.join(directory, 'run');
    const controller = new AbortController();
    await train({
      config: { ...config, checkpointEvery: 1 },
      runDirectory,
      signal: controller.signal,
      onProgress: (event) => {
        if (event.kind === 'stage') controller.abort();
      },
    });
    return runDirectory;
  }

  test('an undamaged run resumes', async () => {
    const runDirectory = await interruptedAfterOneStage();
    const summary = await train({ config: {}, runDirectory, resume: true });
    assert.equal(summary.stages, 2);
    assert.deepEqual(summary.warnings, []);
  });

  test('a flipped bit in a weight file is refused, naming the file', async () => {
    const runDirectory = await interruptedAfterOneStage();
    const weights = path.join(runDirectory, 'checkpoint', 'units', 'agent1', 'model.safetensors');
    const bytes = readFileSync(weights);
    bytes[bytes.length - 3]! ^= 1;
    writeFileSync(weights, bytes);
    await assert.rejects(
      train({ config: {}, runDirectory, resume: true }),
      /agent1\/model\.safetensors: the file does not match the checksum/,
    );
  });

  test('a truncated or edited metrics file is refused, not summarized silently', async () => {
    const runDirectory = await interruptedAfterOneStage();
    const metrics = path.join(runDirectory, 'metrics.jsonl');
    const original = readFileSync(metrics, 'utf8');
    truncateSync(metrics, Math.floor(original.length / 2));
    await assert.rejects(
      train({ config: {}, runDirectory, resume: true }),
      /metrics\.jsonl: the file holds \d+ bytes but the checkpoint was taken at \d+/,
    );
    writeFileSync(metrics, original.replace('"type":"update"', '"type":"update" '));
    await assert.rejects(
      train({ config: {}, runDirectory, resume: true }),
      /metrics\.jsonl: the first \d+ bytes .* were edited or damaged/,
    );
  });

  test('a metrics line that is not JSON is an error naming the line (a partial last line is not)', async () => {
    const runDirectory = await interruptedAfterOneStage();
    const run = await RunDirectory.open(runDirectory);
    const metrics = path.join(runDirectory, 'metrics.jsonl');
    const complete = run.readMetrics().length;
    appendFileSync(metrics, '{"type":"upd');
    assert.equal(
      run.readMetrics().length,
      complete,
      'a half-written last line is still being written',
    );
    writeFileSync(metrics, `{"type":"eval"}\nnot json\n{"type":"eval"}\n`);
    assert.throws(() => run.readMetrics(), /metrics\.jsonl: line 2 is not a JSON record/);
  });

  test('the trainedRun helper leaves a checkpoint with checksums', async () => {
    const { runDirectory } = await trainedRun();
    const state = JSON.parse(
      readFileSync(path.join(runDirectory, 'checkpoint', 'state.json'), 'utf8'),
    );
    assert.match(state.integrity.metricsSha256, /^[0-9a-f]{64}$/);
    assert.ok(
      Object.keys(state.integrity.files).some((file) => file.endsWith('model.safetensors')),
    );
  });
});

describe('runs that train without training are flagged', () => {
  test('with a learning rate so large that every step is undone, the run warns and says why', async () => {
    const { directory, config } = await fixture();
    const warnings: string[] = [];
    const summary = await train({
      config: { ...config, optimizer: { learningRate: 1e3 } },
      runDirectory: path.join(directory, 'run'),
      onProgress: (event: TrainProgress) => {
        if (event.kind === 'warning') warnings.push(event.message);
      },
    });
    assert.equal(warnings.length, 1, 'said once while every stage is idle');
    assert.match(warnings[0]!, /stage 1: every update was undone.*optimizer\.learningRate = 1000/);
    assert.equal(summary.warnings.length, 1);
    assert.match(summary.warnings[0]!, /2 of 2 stages changed no weights \(all of them\)/);
  });

  test('a healthy run has no warnings', async () => {
    const { directory, config } = await fixture();
    const summary = await train({ config, runDirectory: path.join(directory, 'run') });
    assert.deepEqual(summary.warnings, []);
  });
});

describe('a trainer holds its run directory', () => {
  test('a live trainer blocks a second one; a crashed one shows as stopped and resumes', async () => {
    const { directory, config } = await fixture();
    const runDirectory = path.join(directory, 'run');
    await train({ config, runDirectory, signal: AbortSignal.abort() });
    const lockPath = path.join(runDirectory, runLockFile);
    const lock = (pid: number) =>
      JSON.stringify({
        pid,
        host: hostname(),
        startedAt: 'x',
        heartbeatAt: new Date().toISOString(),
      });
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      writeFileSync(lockPath, lock(sleeper.pid!));
      await assert.rejects(
        train({ config: {}, runDirectory, resume: true }),
        new RegExp(`is being trained by process ${sleeper.pid}`),
      );
      assert.equal(describeRun((await loadRuns([runDirectory]))[0]!).status, 'interrupted');
      rmSync(path.join(runDirectory, 'summary.json'));
      assert.equal(describeRun((await loadRuns([runDirectory]))[0]!).status, 'running');
    } finally {
      sleeper.kill();
    }
    writeFileSync(lockPath, lock(await deadPid()));
    assert.equal(describeRun((await loadRuns([runDirectory]))[0]!).status, 'stopped');
    const summary = await train({ config: {}, runDirectory, resume: true });
    assert.equal(summary.stages, 2);
  });
});
