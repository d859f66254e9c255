import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { parseWithSchema } from '../../util/schema.js';
import { trainConfigSchema } from '../config/train-config.js';
import { initialRunState } from '../run/run-state.js';
import { RunOutputs } from './run-outputs.js';
import type { WandbRun, WandbSdk } from './wandb.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-wandb-'));
after(() => rmSync(directory, { recursive: true, force: true }));

const config = (tracking: unknown) => parseWithSchema(trainConfigSchema, { tracking }, 'config');

/** A stand-in for @wandb/sdk that records what it was given (the real one needs the server). */
function fakeSdk() {
  const seen = {
    init: [] as unknown[],
    logs: [] as Array<[Record<string, number>, number?]>,
    finished: 0,
  };
  const sdk: WandbSdk = {
    init: async (options) => {
      seen.init.push(options);
      process.on('SIGINT', () => process.exit(1)); // as the SDK does
      const run: WandbRun = {
        log: (data, step) => void seen.logs.push([data, step]),
        finish: async () => void seen.finished++,
      };
      return run;
    },
  };
  return { seen, importer: async () => ({ default: sdk }) };
}

test('W&B online without @wandb/sdk installed: an error that says what to install or set', async () => {
  const missing = async (specifier: string) => {
    throw new Error(`Cannot find package '${specifier}'`);
  };
  await assert.rejects(
    RunOutputs.open(config({ wandb: { project: 'p', mode: 'online' } }), directory, missing),
    /tracking\.wandb\.mode is "online" but @wandb\/sdk is not installed; install it beside teamtr \(npm install @wandb\/sdk graphql\), or drop tracking\.wandb\.mode/,
  );
});

test('W&B offline needs the TensorBoard file it keeps its record in', async () => {
  await assert.rejects(
    RunOutputs.open(config({ tensorboard: false, wandb: { project: 'p' } }), directory),
    /tracking\.wandb: .*turn tracking\.tensorboard on, or set tracking\.wandb\.mode to online/,
  );
});

test('W&B online logs every record’s numbers once per stage, in order, and leaves Ctrl-C to teamtr', async () => {
  const runDirectory = path.join(directory, 'run');
  rmSync(runDirectory, { recursive: true, force: true });
  mkdirSync(runDirectory);
  const records = [
    { type: 'eval', stage: 0, accuracy: 0.25 },
    { type: 'update', stage: 1, agent: 'solver', kl: 0.004, inRegion: true, occupancyGap: null },
    { type: 'stage', stage: 1, rewardAfter: 0.5, schedule: 'teamtr' },
  ];
  writeFileSync(
    path.join(runDirectory, 'metrics.jsonl'),
    records.map((record) => JSON.stringify(record)).join('\n') + '\n{"type":"eval","sta',
  );
  const { seen, importer } = fakeSdk();
  const interruptsBefore = process.listenerCount('SIGINT');
  const outputs = await RunOutputs.open(
    config({ wandb: { project: 'teams', entity: 'lab', mode: 'online' } }),
    runDirectory,
    importer,
  );
  assert.equal(process.listenerCount('SIGINT'), interruptsBefore);
  const init = seen.init[0] as { project: string; entity: string; name: string; id: string };
  assert.deepEqual([init.project, init.entity, init.name], ['teams', 'lab', 'run']);
  assert.match(init.id, /^[0-9a-f]{16}$/);
  await outputs.start(initialRunState());
  assert.deepEqual(seen.logs, [
    [{ 'eval/accuracy': 0.25 }, 0],
    [{ 'update/kl/solver': 0.004, 'update/inRegion/solver': 1, 'stage/rewardAfter': 0.5 }, 1],
  ]);
  outputs.sync();
  assert.equal(seen.logs.length, 2, 'a line still being written is read once it is complete');
  await outputs.close();
  assert.equal(seen.finished, 1);
});
