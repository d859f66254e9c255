import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseWithSchema } from '../util/schema.js';
import { trainConfigSchema, type TrainConfig } from './config/train-config.js';
import type { UpdateRecord } from './records.js';
import { createTrainingFixture } from './test-support/fixture.js';
import { train, type TrainProgress } from './trainer.js';
import type { TrainSummary } from './summary.js';
import { noEffectCause } from './warnings.js';

/**
 * A run whose every reward is 0 trains nothing; the trainer must say that it was the rewards
 * (and what to check), not blame dynamic sampling or missing tokens.
 */
let directory: string;
let runDirectory: string;
let config: TrainConfig;
let summary: TrainSummary;
const warnings: string[] = [];
let idleUpdate: UpdateRecord;

before(async () => {
  const fixture = await createTrainingFixture();
  directory = fixture.directory;
  runDirectory = path.join(directory, 'run');
  const jsonl = fixture.config.task as { path: string; roles: { name: string; prompt: string }[] };
  const problems = readFileSync(jsonl.path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { id: string; prompt: string; answer: string });
  const rest = { ...fixture.config };
  delete rest.task;
  summary = await train({
    config: {
      ...rest,
      budget: { generatedTokens: 100_000, maxStages: 2 },
      evaluation: { problems: 4, every: 10 },
    },
    task: {
      name: 'never-right',
      maxTurnChars: 2,
      roles: jsonl.roles,
      problems: { train: problems.slice(0, 30), eval: problems.slice(30) },
      reward: () => 0,
    },
    runDirectory,
    onProgress: (event: TrainProgress) => {
      if (event.kind === 'warning') warnings.push(event.message);
    },
  });
  config = parseWithSchema(
    trainConfigSchema,
    JSON.parse(readFileSync(path.join(runDirectory, 'config.json'), 'utf8')),
    'config.json',
  );
  const lines = readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8').trim().split('\n');
  idleUpdate = lines
    .map((line) => JSON.parse(line) as UpdateRecord)
    .find((record) => record.type === 'update')!;
});
after(() => rmSync(directory, { recursive: true, force: true }));

describe('a run that changed no weights says why', () => {
  test('every reward 0: the rewards, with the verifier, the answer format and the transcripts to check', () => {
    assert.equal(warnings.length, 1, warnings.join('\n'));
    for (const message of [warnings[0]!, summary.warnings[0]!]) {
      assert.match(message, /every reward was 0/);
      assert.match(message, /verifier or reward function/);
      assert.match(message, /answer format/);
      assert.ok(message.includes(`teamtr samples ${runDirectory}`), message);
      assert.doesNotMatch(message, /dynamic sampling|no tokens/);
    }
    assert.match(summary.warnings[0]!, /2 of 2 stages changed no weights \(all of them\)/);
  });

  test('all rewards equal, no tokens of the agent, every group dropped, equal within groups', () => {
    const cause = (change: Partial<UpdateRecord>, settings: Partial<TrainConfig> = {}) =>
      noEffectCause({ ...config, ...settings }, [{ ...idleUpdate, ...change }], 'runs/r');
    assert.match(cause({ batchRewardMean: 1 }), /every trajectory got the same reward \(1\)/);
    assert.match(
      cause({ tokens: 0 }),
      new RegExp(`agent ${idleUpdate.agent} had no tokens in the batch.*protocol\\.turnOrder`),
    );
    const varied = { batchRewardMean: 0.5, batchRewardStandardError: 0.1 };
    assert.match(
      cause({ ...varied, droppedGroups: config.rollout.problemsPerBatch }),
      /dynamic sampling dropped every prompt group.*objective\.dynamicSampling/,
    );
    assert.match(
      cause(varied),
      /within every prompt group the rewards were equal.*rollout\.groupSize/,
    );
    assert.match(cause({ lastStepScale: 0 }), /every update was undone/);
  });
});
