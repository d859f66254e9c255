import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import {
  currentHost,
  hostKind,
  parseCpuInfo,
  readResultDirectory,
  readResultFile,
  resultFormat,
  writeResultFile,
  type ResultRecordInput,
} from './result-file.js';
import { renderResultsPage } from './results-page.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-result-file-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const record: ResultRecordInput = {
  format: resultFormat,
  title: 'Schedules at matched budgets',
  command: 'node bin/teamtr.js compare --seeds 0,1,2',
  commit: '0123456789abcdef0123456789abcdef01234567',
  measuredAt: '2030-01-02T03:04:05.000Z',
  host: {
    cpu: 'Example CPU 9000',
    kind: 'intel-avx512-bf16',
    features: ['avx512f', 'avx512_bf16'],
    cores: 2,
    memoryGiB: 24,
    node: 'v20.20.2',
    quiet: false,
    caches: { l2KiB: 2048 },
  },
  wallSeconds: 612.5,
  tables: [
    {
      caption: 'No schedule is ahead at this budget.',
      columns: ['schedule', 'accuracy | after'],
      rows: [
        ['teamtr', 0.452],
        ['joint', null],
      ],
    },
  ],
  notes: ['Accuracy is on 1,000 held-out problems.'],
};

describe('result files', () => {
  test('round-trip through writeResultFile, extra host facts kept', async () => {
    const file = path.join(scratch, 'schedules.json');
    await writeResultFile(file, record);
    const read = await readResultFile(file);
    assert.equal(read.title, record.title);
    assert.deepEqual(read.host.caches, { l2KiB: 2048 });
    assert.deepEqual(
      readdirSync(scratch).filter((name) => name !== 'schedules.json'),
      [],
      'no temporary file left behind',
    );
  });

  test('a row whose cells do not match the columns is refused, naming the file and the row', async () => {
    const file = path.join(scratch, 'ragged.json');
    await assert.rejects(
      writeResultFile(file, {
        ...record,
        tables: [{ caption: 'x', columns: ['a', 'b'], rows: [['only one']] }],
      }),
      /ragged\.json.*tables\[0\]\.rows\[0\]: has 1 cells for 2 columns/,
    );
    assert.deepEqual(readdirSync(scratch).includes('ragged.json'), false);
  });

  test('a misspelled key is refused with the valid keys; raw figures go under data', async () => {
    const file = path.join(scratch, 'typo.json');
    writeFileSync(file, JSON.stringify({ ...record, note: ['x'] }));
    await assert.rejects(readResultFile(file), /unknown key "note" \(valid keys: .*notes.*data/);
    writeFileSync(file, JSON.stringify({ ...record, data: { raw: [1, 2, 3] } }));
    assert.deepEqual((await readResultFile(file)).data, { raw: [1, 2, 3] });
  });
});

describe('the host', () => {
  test('model name and flags come from /proc/cpuinfo text, x86 and Arm', () => {
    assert.deepEqual(
      parseCpuInfo(
        'processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold\nflags\t\t: fpu avx2 avx512f\n',
      ),
      { cpu: 'Intel(R) Xeon(R) Gold', flags: ['fpu', 'avx2', 'avx512f'] },
    );
    assert.deepEqual(parseCpuInfo('Features\t: fp asimd\n'), { cpu: null, flags: ['fp', 'asimd'] });
  });

  test('the kind names vendor, widest SIMD and bfloat16 support', () => {
    assert.equal(
      hostKind('Intel(R) Xeon(R)', ['avx2', 'avx512f', 'avx512_bf16']),
      'intel-avx512-bf16',
    );
    assert.equal(hostKind('AMD EPYC 9B14', ['avx2', 'avx512f']), 'amd-avx512');
    assert.equal(hostKind('AMD Ryzen', ['avx2']), 'amd-avx2');
    assert.equal(hostKind('', ['asimd']), 'arm-neon');
  });

  test('this machine is described completely', () => {
    const host = currentHost({ quiet: true });
    assert.ok(host.cores >= 1 && host.memoryGiB! > 0);
    assert.equal(host.node, process.version);
    assert.equal(host.kind, hostKind(host.cpu, host.features));
  });
});

describe('docs/results.md', () => {
  test('shows each command, host and table, and not the commit or the time', async () => {
    const file = path.join(scratch, 'page.json');
    await writeResultFile(file, record);
    const page = renderResultsPage([{ name: 'page', record: await readResultFile(file) }]);
    assert.match(page, /```sh\nnode bin\/teamtr\.js compare --seeds 0,1,2\n```/);
    assert.match(
      page,
      /Host: Example CPU 9000 \(intel-avx512-bf16\), 2 cores, 24 GiB, Node v20\.20\.2, shared/,
    );
    assert.match(page, /10 min 13 s wall/);
    assert.match(
      page,
      /\| schedule \| accuracy \\\| after \|\n\|---\|---\|\n\| teamtr \| 0\.452 \|\n\| joint \|  \|/,
    );
    assert.match(page, /- Accuracy is on 1,000 held-out problems\./);
    assert.doesNotMatch(page, /0123456789abcdef|2030-01-02/);
  });

  test('the committed page is what the committed result files render to (npm run results)', async () => {
    const rendered = renderResultsPage(
      await readResultDirectory(path.join(root, 'docs', 'results')),
    );
    assert.equal(
      readFileSync(path.join(root, 'docs', 'results.md'), 'utf8'),
      rendered,
      'docs/results.md is stale: run `npm run results` and commit it',
    );
  });
});
