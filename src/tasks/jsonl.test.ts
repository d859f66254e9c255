import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, FileFormatError, TeamtrError } from '../util/errors.js';
import { parquetWriteFile } from 'hyparquet-writer';
import { loadJsonlTask } from './jsonl.js';
import { splitOf } from './splits.js';

const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-jsonl-'));
after(() => rmSync(directory, { recursive: true, force: true }));

let fileCounter = 0;
function writeDataset(content: string): string {
  const file = path.join(directory, `data-${fileCounter++}.jsonl`);
  writeFileSync(file, content);
  return file;
}

const lines = (...records: object[]) => records.map((record) => JSON.stringify(record)).join('\n');

/** Asserts that loading fails with a FileFormatError naming the file and matching `pattern`. */
async function assertFileError(content: string, pattern: RegExp): Promise<void> {
  const file = writeDataset(content);
  await assert.rejects(loadJsonlTask(file, { verifier: 'exact' }), (error: unknown) => {
    assert.ok(error instanceof FileFormatError, String(error));
    assert.equal(error.file, file);
    assert.ok(error.message.startsWith(`${file}: `), error.message);
    assert.match(error.message, pattern);
    return true;
  });
}

describe('loadJsonlTask', () => {
  it('loads problems, honours split fields and skips blank lines', async () => {
    const file = writeDataset(
      [
        JSON.stringify({ prompt: '2+2', answer: 4, id: 'a', split: 'train' }),
        '',
        '   ',
        JSON.stringify({ prompt: '3+3', answer: '6', split: 'eval', metadata: { source: 'x' } }),
        JSON.stringify({ prompt: '4+4', answer: '8', id: 'c', split: 'train' }),
        '',
      ].join('\n'),
    );
    const task = await loadJsonlTask(file, { verifier: 'numeric' });
    const train = task.split('train', { seed: 0 });
    const evaluation = task.split('eval', { seed: 0 });
    assert.deepEqual(
      train.map((problem) => [problem.id, problem.prompt, problem.answer]),
      [
        ['a', '2+2', '4'],
        ['c', '4+4', '8'],
      ],
    );
    assert.deepEqual(evaluation[0], {
      id: 'line-4',
      prompt: '3+3',
      answer: '6',
      metadata: { source: 'x', line: 4 },
    });
    assert.equal(task.verify(evaluation[0]!, 'it is 6').correct, true);
    assert.equal(task.protocol.roles.length, 3);
    assert.ok(!task.alphabet.includes('\n') && task.alphabet.includes('+'));
  });

  it('reads CRLF files with a byte-order mark', async () => {
    const file = writeDataset(
      `\uFEFF${lines({ prompt: 'a', answer: 'b', split: 'eval' })}\r\n\r\n`,
    );
    const task = await loadJsonlTask(file, { verifier: 'exact' });
    assert.equal(task.split('eval', { seed: 0 })[0]!.prompt, 'a');
  });

  it('splits lines without a split field by hashing the id, else the prompt', async () => {
    const records = Array.from({ length: 400 }, (_, index) => ({
      prompt: `q${index}`,
      answer: '1',
      ...(index % 2 === 0 ? { id: `id${index}` } : {}),
    })) as { prompt: string; answer: string; id?: string }[];
    const file = writeDataset(lines(...records));
    const task = await loadJsonlTask(file, { verifier: 'exact', evalFraction: 0.25 });
    const evaluation = task.split('eval', { seed: 0 });
    const train = task.split('train', { seed: 0 });
    assert.equal(evaluation.length + train.length, 400);
    for (const problem of evaluation) {
      const record = records[Number(problem.prompt.slice(1))]!;
      assert.equal(splitOf(record.id ?? record.prompt, 0.25), 'eval');
    }
    assert.ok(evaluation.length > 60 && evaluation.length < 140, `${evaluation.length} eval`);
    const again = await loadJsonlTask(file, { verifier: 'exact', evalFraction: 0.25 });
    assert.deepEqual(again.split('eval', { seed: 0 }), evaluation);
  });

  it('samples a seeded subset in file order when a count is given', async () => {
    const file = writeDataset(
      lines(
        ...Array.from({ length: 50 }, (_, index) => ({
          prompt: `q${index}`,
          answer: 'x',
          split: 'train',
        })),
      ),
    );
    const task = await loadJsonlTask(file, { verifier: 'exact' });
    const sample = task.split('train', { seed: 3, count: 10 });
    assert.equal(sample.length, 10);
    assert.deepEqual(task.split('train', { seed: 3, count: 10 }), sample);
    assert.notDeepEqual(task.split('train', { seed: 4, count: 10 }), sample);
    const lineNumbers = sample.map((problem) => problem.metadata!.line as number);
    assert.deepEqual(
      [...lineNumbers].sort((first, second) => first - second),
      lineNumbers,
    );
    assert.equal(task.split('train', { seed: 3, count: 500 }).length, 50);
  });

  it('says how to get problems into an empty split', async () => {
    const file = writeDataset(lines({ prompt: 'a', answer: 'b', split: 'train' }));
    const task = await loadJsonlTask(file, { verifier: 'exact' });
    assert.throws(
      () => task.split('eval', { seed: 0 }),
      (error: unknown) =>
        error instanceof TeamtrError && /no eval problems.*"split": "eval"/.test(error.message),
    );
  });

  it('names the file and line of invalid JSON', async () => {
    await assertFileError(
      `${lines({ prompt: 'a', answer: 'b' })}\n\n{"prompt": "c", "answer": }`,
      /^.*: line 3: not valid JSON .*each line must be one JSON object/,
    );
  });

  it('names a missing field, a wrong type and an empty prompt', async () => {
    await assertFileError(lines({ prompt: 'a' }), /line 1: "answer" is missing/);
    await assertFileError(
      lines({ prompt: 'a', answer: true }),
      /line 1: "answer" must be a string or a number/,
    );
    await assertFileError(
      lines({ prompt: 7, answer: 'x' }),
      /line 1: "prompt" must be a non-empty string/,
    );
    await assertFileError(
      lines({ prompt: 'a', answer: 'b' }, { prompt: '  ', answer: 'b' }),
      /line 2: "prompt" must be a non-empty string, not empty/,
    );
    await assertFileError(
      lines({ prompt: 'a', answer: 'b', split: 'test' }),
      /line 1: "split" must be one of "train", "eval"/,
    );
  });

  it('rejects lines that are not objects and unknown keys', async () => {
    await assertFileError('[1, 2]', /line 1: not a JSON object/);
    await assertFileError(
      lines({ prompt: 'a', answer: 'b', level: 3 }),
      /line 1: unknown key "level" \(valid keys: prompt, answer, id, split, metadata\); put extra fields under "metadata"/,
    );
  });

  it('rejects duplicate ids, empty files and missing files', async () => {
    await assertFileError(
      lines({ prompt: 'a', answer: 'b', id: 'x' }, { prompt: 'c', answer: 'd', id: 'x' }),
      /line 2: id "x" is already used on line 1/,
    );
    await assertFileError('', /contains no problems/);
    await assertFileError('\n  \n\n', /contains no problems/);
    const missing = path.join(directory, 'absent.jsonl');
    await assert.rejects(
      loadJsonlTask(missing, { verifier: 'exact' }),
      (error: unknown) =>
        error instanceof FileFormatError && /absent\.jsonl: file not found/.test(error.message),
    );
    const folder = path.join(directory, 'folder.jsonl');
    mkdirSync(folder);
    await assert.rejects(
      loadJsonlTask(folder, { verifier: 'exact' }),
      /is a directory, not a regular file/,
    );
  });

  it('validates its options and the verifier spec', async () => {
    const file = writeDataset(lines({ prompt: 'a', answer: 'b' }));
    await assert.rejects(
      loadJsonlTask(file, { verifier: 'fuzzy' as 'exact' }),
      (error: unknown) =>
        error instanceof ConfigError && /exact, numeric, math, choice|valid/.test(error.message),
    );
    const task = await loadJsonlTask(file, {
      verifier: { name: 'choice', letters: 'ABCD' },
      roles: [{ name: 'solo', prompt: 'Answer.' }],
    });
    assert.deepEqual(task.protocol.turnOrder, [0]);
    assert.equal(task.verify({ id: 'x', prompt: 'a', answer: 'C' }, 'the answer is (c)').reward, 1);
    assert.equal(task.demonstrator, undefined);
  });
});

describe('loadJsonlTask: bytes that are not UTF-8', () => {
  it('refuses them, naming the line, instead of training on U+FFFD', async () => {
    const file = path.join(directory, `latin1-${fileCounter++}.jsonl`);
    writeFileSync(
      file,
      Buffer.concat([
        Buffer.from(`${JSON.stringify({ prompt: 'ok', answer: 1, split: 'train' })}\n`),
        Buffer.from('{"prompt": "caf'),
        Buffer.from([0xe9]), // "é" in Latin-1
        Buffer.from('", "answer": 2, "split": "eval"}\n'),
      ]),
    );
    await assert.rejects(
      loadJsonlTask(file, { verifier: 'exact' }),
      (error: unknown) =>
        error instanceof FileFormatError && /line 2 is not valid UTF-8/.test(error.message),
    );
    const valid = writeDataset(
      lines(
        { prompt: 'café', answer: '\uFFFD', split: 'train' },
        { prompt: 'b', answer: 'c', split: 'eval' },
      ),
    );
    assert.equal(
      (await loadJsonlTask(valid, { verifier: 'exact' })).split('train', { seed: 0 })[0]!.prompt,
      'café',
    );
  });
});

describe('loadJsonlTask: the layouts datasets ship in', () => {
  it('reads GSM8K lines, chat messages lines and renamed fields', async () => {
    const gsm8k = writeDataset(
      lines(
        {
          question: 'Tom has 3 apples and buys 4. How many?',
          answer: 'He has 3+4 = 7.\n#### 7',
          split: 'train',
        },
        { question: 'Half of 10?', answer: '10/2 = 5\n#### 5', split: 'eval' },
      ),
    );
    const math = await loadJsonlTask(gsm8k, { verifier: 'math' });
    const [problem] = math.split('train', { seed: 0 });
    assert.equal(problem!.prompt, 'Tom has 3 apples and buys 4. How many?');
    assert.equal(problem!.answer, '7');
    assert.equal(math.verify(problem!, 'First 3, then 4 more.\n#### 7').correct, true);
    assert.equal(math.verify(problem!, 'so the answer is \\boxed{7}').correct, true);
    assert.equal(math.verify(problem!, 'Answer: 8').correct, false);

    const chat = writeDataset(
      lines(
        {
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: '2+2?' },
            { role: 'assistant', content: '4' },
          ],
          split: 'train',
        },
        { messages: [{ role: 'user', content: '3+3?' }], answer: 6, split: 'eval' },
      ),
    );
    const chatTask = await loadJsonlTask(chat, { verifier: 'numeric' });
    assert.deepEqual(
      [...chatTask.split('train', { seed: 0 }), ...chatTask.split('eval', { seed: 0 })].map(
        (entry) => [entry.prompt, entry.answer],
      ),
      [
        ['2+2?', '4'],
        ['3+3?', '6'],
      ],
    );

    const renamed = writeDataset(
      lines(
        { problem: 'a', solution: 'b', split: 'train' },
        { problem: 'c', solution: 'd', split: 'eval' },
      ),
    );
    const renamedTask = await loadJsonlTask(renamed, {
      verifier: 'exact',
      fields: { prompt: 'problem', answer: 'solution' },
    });
    assert.deepEqual(
      renamedTask.split('eval', { seed: 0 }).map((entry) => [entry.prompt, entry.answer]),
      [['c', 'd']],
    );
  });

  it('a chat line without a user message is an error naming the line', async () => {
    await assertFileError(
      lines(
        { prompt: 'x', answer: 'y', split: 'train' },
        { messages: [{ role: 'assistant', content: 'hi' }], split: 'eval' },
      ),
      /line 2: .*prompt.* is missing/,
    );
  });
});

describe('loadJsonlTask: Parquet files in the verl layout', () => {
  it('reads chat-message prompts and reward_model.ground_truth; a bad file or row is named', async () => {
    const rows = [
      {
        prompt: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: '2+2?' },
        ],
        truth: '4',
        split: 'train',
        index: 0,
      },
      { prompt: [{ role: 'user', content: '3+3?' }], truth: '6', split: 'test', index: 1 },
      { prompt: [{ role: 'user', content: '5+5?' }], truth: '10', split: 'train', index: 2 },
    ];
    const write = (file: string, prompts: unknown[]) =>
      parquetWriteFile({
        filename: file,
        columnData: [
          { name: 'data_source', data: rows.map(() => 'openai/gsm8k') },
          { name: 'prompt', data: prompts },
          {
            name: 'reward_model',
            data: rows.map((row) => ({ ground_truth: row.truth, style: 'rule' })),
          },
          {
            name: 'extra_info',
            data: rows.map((row) => ({ split: row.split, index: BigInt(row.index) })),
          },
        ],
        schema: [
          { name: 'root', num_children: 4 },
          {
            name: 'data_source',
            type: 'BYTE_ARRAY',
            converted_type: 'UTF8',
            repetition_type: 'OPTIONAL',
          },
          { name: 'prompt', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
          { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
          { name: 'element', repetition_type: 'OPTIONAL', num_children: 2 },
          { name: 'role', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
          {
            name: 'content',
            type: 'BYTE_ARRAY',
            converted_type: 'UTF8',
            repetition_type: 'OPTIONAL',
          },
          { name: 'reward_model', repetition_type: 'OPTIONAL', num_children: 2 },
          {
            name: 'ground_truth',
            type: 'BYTE_ARRAY',
            converted_type: 'UTF8',
            repetition_type: 'OPTIONAL',
          },
          {
            name: 'style',
            type: 'BYTE_ARRAY',
            converted_type: 'UTF8',
            repetition_type: 'OPTIONAL',
          },
          { name: 'extra_info', repetition_type: 'OPTIONAL', num_children: 2 },
          {
            name: 'split',
            type: 'BYTE_ARRAY',
            converted_type: 'UTF8',
            repetition_type: 'OPTIONAL',
          },
          { name: 'index', type: 'INT64', repetition_type: 'OPTIONAL' },
        ],
      });
    const file = path.join(directory, 'verl.parquet');
    write(
      file,
      rows.map((row) => row.prompt),
    );
    const task = await loadJsonlTask(file, { verifier: 'math' });
    assert.deepEqual(
      task
        .split('train', { seed: 0 })
        .map((problem) => [problem.id, problem.prompt, problem.answer]),
      [
        ['0', '2+2?', '4'],
        ['2', '5+5?', '10'],
      ],
    );
    const [held] = task.split('eval', { seed: 0 });
    assert.equal(held!.prompt, '3+3?');
    assert.equal(held!.metadata!.data_source, 'openai/gsm8k');

    const noUser = path.join(directory, 'no-user.parquet');
    write(noUser, [rows[0]!.prompt, [{ role: 'assistant', content: 'hi' }], rows[2]!.prompt]);
    await assert.rejects(
      loadJsonlTask(noUser, { verifier: 'math' }),
      (error: unknown) =>
        error instanceof FileFormatError &&
        /no-user\.parquet: row 2: .*prompt.* is missing/.test(error.message),
    );
    const broken = path.join(directory, 'broken.parquet');
    writeFileSync(broken, 'PAR1 this is not parquet');
    await assert.rejects(
      loadJsonlTask(broken, { verifier: 'math' }),
      (error: unknown) =>
        error instanceof FileFormatError &&
        /broken\.parquet: is not a readable Parquet file/.test(error.message),
    );
  });
});
