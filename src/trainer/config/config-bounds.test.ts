import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { readConfigFile } from '../../cli/config-flags.js';
import { parseWithSchema } from '../../util/schema.js';
import { trainConfigSchema } from './train-config.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

describe('config values the run could not honour are refused when the config is read', () => {
  test('absurd sizes and values name their setting', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ rollout: { groupSize: 100_000_000 } }, /rollout\.groupSize/],
      [{ rollout: { problemsPerBatch: 1_000_000_000 } }, /rollout\.problemsPerBatch/],
      [
        { rollout: { problemsPerBatch: 100_000, groupSize: 4_000 } },
        /problemsPerBatch × groupSize/,
      ],
      [{ evaluation: { problems: 1_000_000_000 } }, /evaluation\.problems/],
      [{ certificate: { epsilon: 1e308 } }, /certificate\.epsilon/],
      [{ objective: { clipLow: 1e308 } }, /objective\.clipLow/],
      [{ optimizer: { learningRate: 1e300 } }, /optimizer\.learningRate/],
      [{ optimizer: { weightDecay: 1e300 } }, /optimizer\.weightDecay/],
      [{ protocol: { maxTurnTokens: 1e9 } }, /protocol\.maxTurnTokens/],
    ];
    for (const [config, message] of cases)
      assert.throws(() => parseWithSchema(trainConfigSchema, config, 'config'), message);
    // The defaults and the demo's settings stay valid.
    assert.doesNotThrow(() => parseWithSchema(trainConfigSchema, {}, 'config'));
  });

  test('a config file over 1 MiB is refused before it is parsed', () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-config-'));
    cleanup.push(directory);
    const file = path.join(directory, 'big.yaml');
    writeFileSync(file, `seed: 0\n${'# padding\n'.repeat(220_000)}`);
    assert.throws(
      () => readConfigFile(file),
      /big\.yaml: is 2\.1 MiB; a config file is at most 1 MiB/,
    );
  });
});
