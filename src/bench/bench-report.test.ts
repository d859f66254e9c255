import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTypeScriptBackend } from '../backend/typescript.js';
import type { KernelBackend } from '../backend/types.js';
import { allocateZeroed, release } from '../tensor/index.js';
import { boundOf } from './bound.js';
import { hostLines, kernelLines, pathLines } from './host-report.js';
import { benchRecord, type BenchRun } from './result-record.js';
import { measureTimeSplit, measureTimeSplitSync, splitLines } from './time-split.js';

describe("the machine's bound", () => {
  it('is the fastest of ours, OpenBLAS and PyTorch, naming whose', () => {
    assert.deepEqual(boundOf({ own: 120, openblas: 130, torch: 125 }), {
      own: 120,
      openblas: 130,
      torch: 125,
      bound: 130,
      fastest: 'openblas',
    });
    assert.equal(boundOf({ own: 120, openblas: null, torch: null }).fastest, 'own');
    assert.equal(boundOf({ own: 120, openblas: 90, torch: 140 }).bound, 140);
  });
});

describe('the host and path report', () => {
  it('states kind, model, CPUs and caches', () => {
    const lines = hostLines({
      vendor: 'intel',
      model: 'Xeon',
      kind: 'intel-avx512-bf16',
      widestIsa: 'avx512',
      features: ['avx2', 'avx512f'],
      l1dBytes: 48 * 1024,
      l2Bytes: 2 * 2 ** 20,
      l3Bytes: 260 * 2 ** 20,
      cpus: 2,
    });
    assert.deepEqual(lines, [
      'host: intel-avx512-bf16 (Xeon), 2 CPUs',
      'caches: L1d 48 KiB, L2 2 MiB per core, L3 260 MiB',
      'features: avx2 avx512f',
    ]);
  });

  it('states the build, who runs large products, and every block size taken from the caches', () => {
    const lines = kernelLines({
      isa: 'avx512',
      blas: 'openblas',
      blasVersion: '0.3.21',
      blasCore: 'Cooperlake',
      sgemm: 'own',
      sgemmReason: 'host kind default',
      vectorWidth: 16,
      threads: 2,
      signatures: 'fingerprint',
      tuning: {
        aBlockBytes: 2 ** 20,
        packedRows: 1008,
        packedColumns: 1024,
        rowTileBytes: 512 * 1024,
      },
    });
    assert.deepEqual(lines, [
      'kernels: avx512 build (512-bit vectors), 2 threads; large float32 products: own ' +
        '(host kind default); OpenBLAS 0.3.21 loaded with core type Cooperlake',
      'block sizes from the caches: A block 1 MiB (column panels), packed kernel 1008 rows × ' +
        '1024 columns of B, bfloat16 row tile 512 KiB',
    ]);
  });

  it("gives each path's share of its kernel's multiply-adds, largest first", () => {
    const lines = pathLines([
      { kernel: 'own sgemm', path: 'panels', calls: 3, multiplyAdds: 100 },
      { kernel: 'own sgemm', path: 'packed', calls: 1, multiplyAdds: 300 },
      { kernel: 'attention', path: 'decode step', calls: 5, multiplyAdds: 0 },
    ]);
    assert.deepEqual(lines, [
      '  own sgemm: packed 75%, panels 25% (4 calls)',
      '  attention: decode step 100% (5 calls)',
    ]);
  });
});

describe('the time split', () => {
  it('times each kernel call, products by weight shape with their multiply-adds', async () => {
    const backend = createTypeScriptBackend();
    const [m, n, k] = [20, 6, 5];
    // A buffer of this size in the pool, so the one below is reused and filled (a new buffer
    // is zero already and is not counted as zero-filled).
    release(allocateZeroed(4096));
    const { split } = await measureTimeSplit(backend, async (timed) => {
      for (let call = 0; call < 3; call++)
        timed.matmul({
          a: new Float32Array(m * k),
          b: new Float32Array(k * n),
          c: new Float32Array(m * n),
          batch: 1,
          m,
          n,
          k,
          transposeA: false,
          transposeB: true,
          strideA: 0,
          strideB: 0,
        });
      timed.softmax({
        input: new Float32Array(8),
        output: new Float32Array(8),
        rows: 2,
        columns: 4,
      });
      release(allocateZeroed(4096));
      return null;
    });
    const product = split.parts.find((part) => part.part === 'matmul 6×5 Bᵀ, many rows')!;
    assert.deepEqual([product.calls, product.multiplyAdds], [3, 3 * m * n * k]);
    assert.equal(split.parts.find((part) => part.part === 'softmax')?.calls, 1);
    assert.equal(split.zeroFilledBytes, 4 * 4096);
    const lines = splitLines(split);
    assert.match(lines.at(-2)!, /^ {2}JavaScript between kernels: \d+\.\d\d s/);
    assert.match(lines.at(-1)!, /page faults: \d+ minor/);
    assert.equal(product.cpuSeconds, undefined);
    assert.doesNotMatch(lines.join('\n'), /threads busy/);
  });

  it('with cpu, reads the CPU time of each part, a synchronous run restoring nothing itself', () => {
    const backend = createTypeScriptBackend();
    const rows = 256;
    const { result, split } = measureTimeSplitSync(
      backend,
      (timed) => {
        const input = new Float32Array(rows * rows).fill(1);
        timed.softmax({ input, output: new Float32Array(rows * rows), rows, columns: rows });
        return 'done';
      },
      { cpu: true },
    );
    assert.equal(result, 'done');
    const softmax = split.parts.find((part) => part.part === 'softmax')!;
    assert.ok(softmax.cpuSeconds! > 0, `softmax took ${softmax.cpuSeconds} CPU seconds`);
    assert.match(splitLines(split, 0).join('\n'), /softmax: .* calls, \d+\.\d threads busy/);
  });

  it('parts attention into decode steps, query blocks and the forward of a gradient step', () => {
    const [heads, headDim, keyLength] = [2, 4, 3];
    const attention = (queryLength: number, keepProbabilities: boolean) => (timed: KernelBackend) =>
      timed.attention({
        query: new Float32Array(queryLength * heads * headDim).fill(0.5),
        key: new Float32Array(keyLength * heads * headDim).fill(0.25),
        value: new Float32Array(keyLength * heads * headDim).fill(1),
        output: new Float32Array(queryLength * heads * headDim),
        probabilities: keepProbabilities ? new Float32Array(heads * queryLength * keyLength) : null,
        keyMask: null,
        batch: 1,
        queryLength,
        keyLength,
        keyCapacity: keyLength,
        heads,
        kvHeads: heads,
        headDim,
        queryStart: keyLength - queryLength,
        scale: 0.5,
      });
    const { split } = measureTimeSplitSync(createTypeScriptBackend(), (timed) => {
      attention(1, false)(timed);
      attention(1, false)(timed);
      attention(3, false)(timed);
      attention(3, true)(timed);
      attention(1, true)(timed);
    });
    const parts = Object.fromEntries(split.parts.map((part) => [part.part, part]));
    const counts = (name: string) => [parts[name]?.calls, parts[name]?.multiplyAdds];
    // A decode step's query sees all 3 keys; a block of 3 queries from slot 0 sees 1 + 2 + 3.
    // Scores and weighted values: 2 × heads × headDim multiply-adds a visible key.
    assert.deepEqual(counts('attention, decode steps'), [2, 2 * (2 * 2 * 4 * 3)]);
    assert.deepEqual(counts('attention, query blocks'), [1, 2 * 2 * 4 * 6]);
    // A gradient step's forward, whatever its length (one query sees 3 keys).
    assert.deepEqual(counts('attention, with gradients'), [2, 2 * 2 * 4 * (6 + 3)]);
  });

  it('finishes the split when the run throws, and throws on', () => {
    assert.throws(
      () =>
        measureTimeSplitSync(createTypeScriptBackend(), () => {
          throw new RangeError('inside');
        }),
      /inside/,
    );
  });
});

describe('the result file', () => {
  it('records host, command, the bound and every figure with its fraction and ratio', () => {
    const run: BenchRun = {
      command: 'node bin/teamtr.js bench --json out.json',
      commit: 'abc123',
      startedAt: '2000-01-01T00:00:00.000Z',
      host: null,
      build: null,
      backend: 'typescript',
      bound: boundOf({ own: 100, openblas: 120, torch: null }),
      results: [
        { name: 'work', value: 50, unit: 'tokens/s' },
        { name: 'work-of-sgemm4096', value: 0.8, unit: 'x' },
        { name: 'torch-work', value: 25, unit: 'tokens/s' },
        { name: 'ratio-work', value: 2, unit: 'x' },
      ],
      paths: [],
      splits: [],
      wallSeconds: 12.5,
      load: { before: 0.1, after: 1.9 },
    };
    const record = benchRecord(run) as {
      format: string;
      command: string;
      host: { kind: string; quiet: boolean };
      tables: Array<{ columns: string[]; rows: unknown[][] }>;
    };
    assert.equal(record.format, 'teamtr-result/1');
    assert.equal(record.command, run.command);
    assert.equal((record as unknown as { commit: string }).commit, 'abc123');
    assert.equal(record.host.quiet, true);
    assert.deepEqual(record.tables[0]!.rows.at(-1), ['bound (the fastest)', 120]);
    assert.deepEqual(record.tables[1]!.rows, [['work', 50, 'tokens/s', 0.8, 25, 2]]);
    for (const table of record.tables)
      for (const row of table.rows) assert.equal(row.length, table.columns.length);
    // Two runs on one host, at two real-model sizes, get titles a reader can tell apart.
    const titleOf = (realModelSize: string | null) =>
      (benchRecord({ ...run, realModelSize }) as { title: string }).title;
    assert.equal(titleOf(null), 'teamtr bench on unknown');
    assert.equal(titleOf('1.5b'), 'teamtr bench on unknown, 1.5b real-model shape');
  });
});
