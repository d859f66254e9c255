import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SwapRecord } from '../../trainer/records.js';
import { describeSwap } from './train.js';

const record: SwapRecord = {
  type: 'swap',
  stage: 7,
  generatedTokens: 12000,
  agent: 'finalizer',
  fromModel: 'builtin:arithmetic-chain/role-2',
  toModel: 'models/newcomer',
  rewardBefore: 0.412,
  rewardBeforeStandardError: 0.02,
  rewardAfterSwap: 0.118,
  rewardAfterSwapStandardError: 0.02,
  rewardAfterAlignment: 0.2504,
  rewardAfterAlignmentStandardError: 0.02,
  shock: -0.294,
  shockStandardError: 0.01,
  alignmentSteps: 200,
  alignmentMode: 'sft',
  alignmentNote: null,
  alignmentLossFirst: 1.2,
  alignmentLossLast: 0.4,
  alignmentTokens: 3000,
  swapTokens: 5000,
  recoveryThreshold: 0.392,
};

test('teamtr train prints one line per swap: agent, models, shock and alignment', () => {
  assert.equal(
    describeSwap(record),
    '  swap before stage 7: finalizer builtin:arithmetic-chain/role-2 → models/newcomer; ' +
      'reward 0.412 → 0.118 (shock -0.294), after 200 sft alignment steps 0.250',
  );
  assert.match(
    describeSwap({ ...record, rewardAfterAlignment: null, alignmentMode: 'none', shock: 0.05 }),
    /\(shock \+0\.050\), no alignment$/,
  );
});
