import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundOf } from '../../bench/bound.js';
import { benchRecord, type BenchRun } from '../../bench/result-record.js';
import { resultRecordSchema } from '../../report/result-file.js';

describe('bench --json', () => {
  it('writes a record the result-file schema accepts, a figure that is not finite as an empty cell', () => {
    const run: BenchRun = {
      command: 'node bin/teamtr.js bench --json out.json',
      commit: null,
      startedAt: '2000-01-01T00:00:00.000Z',
      host: null,
      build: null,
      backend: 'typescript',
      bound: boundOf({ own: 100, openblas: null, torch: null }),
      results: [
        { name: 'work', value: 50, unit: 'tokens/s' },
        { name: 'ratio-work', value: Number.NaN, unit: 'x' },
      ],
      paths: [{ workload: 'work', paths: [] }],
      splits: [
        {
          name: 'stage',
          split: {
            wallSeconds: 2,
            parts: [{ part: 'matmul 4×4 Bᵀ, few rows', seconds: 0, calls: 1, multiplyAdds: 64 }],
            zeroFilledBytes: 0,
            freshBytes: 0,
            minorPageFaults: 0,
            majorPageFaults: 0,
            systemSeconds: 0,
          },
        },
      ],
      wallSeconds: 3,
      load: { before: 4, after: 4 },
    };
    const record = resultRecordSchema.parse(benchRecord(run));
    assert.equal(record.host.quiet, false);
    assert.deepEqual(record.tables[1]!.rows, [['work', 50, 'tokens/s', null, null, null]]);
    assert.equal(record.tables.at(-1)!.rows[0]![4], null);
  });
});
