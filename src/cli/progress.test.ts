import assert from 'node:assert/strict';
import { test } from 'node:test';
import { estimatedStages, ProgressReporter, stageStatus } from './progress.js';

const stage = {
  stage: 1,
  generatedTokens: 2_926,
  budget: 600_000,
  reward: 0.352,
  meanKl: 0.0079,
  updates: 3,
  outOfRegion: 0,
  regression: false,
};

test('a stage line names every figure, with the stages the run will take at its pace', () => {
  assert.equal(estimatedStages(stage), 206);
  assert.equal(
    stageStatus(stage),
    'stage 1/~206 reward 0.352 token-KL 7.9e-3 updates 3 out-of-region 0',
  );
  assert.match(
    stageStatus({ ...stage, stage: 206, generatedTokens: 600_100, regression: true }),
    /^stage 206\/206 .* REGRESSION$/,
  );
});

test('without a terminal, progress is labelled lines with their unit', () => {
  const written: string[] = [];
  const progress = new ProgressReporter(false, false, (text) => written.push(text));
  progress.start('train', 600_000, 0, 'tokens');
  progress.update(2_926, stageStatus(stage), 600_000);
  progress.update(5_000, 'too soon for another line', 600_000);
  assert.deepEqual(written, [
    'train: 0/600,000 tokens\n',
    '  stage 1/~206 reward 0.352 token-KL 7.9e-3 updates 3 out-of-region 0, 2,926/600,000 tokens\n',
  ]);
});
