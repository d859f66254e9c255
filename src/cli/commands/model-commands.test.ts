import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readSafetensorsHeader } from '../../io/safetensors.js';
import { loadModel } from '../../models/load.js';
import { writeHuggingFaceFixture } from '../../models/test-support/huggingface-fixture.js';
import { attachLora, loraConfigSchema } from '../../models/lora-config.js';
import { savePeftAdapter } from '../../models/peft.js';
import { scoreToArrays } from '../../nn/score.js';
import type { TransformerLM } from '../../nn/transformer.js';
import { noGrad, tidy } from '../../tensor/index.js';
import { RandomGenerator } from '../../util/random.js';

const mainModule = fileURLToPath(new URL('../main.ts', import.meta.url));

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs several CLI invocations, one after another, in one child process (through tsx): the
 * child captures each one's stdout and stderr and reports them as JSON, so the test pays for
 * loading the CLI once and our own stdout stays the test runner's.
 */
function runCliBatch(argvs: string[][]): Promise<CliRun[]> {
  const script = `
    const { main } = await import(${JSON.stringify(pathToFileURL(mainModule).href)});
    const results = [];
    const write = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };
    for (const argv of JSON.parse(process.env.TEAMTR_TEST_ARGVS)) {
      let stdout = '', stderr = '';
      process.stdout.write = (chunk) => { stdout += chunk; return true; };
      process.stderr.write = (chunk) => { stderr += chunk; return true; };
      const code = await main(argv);
      process.stdout.write = write.out;
      process.stderr.write = write.err;
      results.push({ code, stdout, stderr });
    }
    write.out(JSON.stringify(results));`;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        env: {
          ...process.env,
          TEAMTR_TEST_ARGVS: JSON.stringify(argvs),
          TEAMTR_QUIET_BACKEND: '1',
        },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`CLI batch failed: ${stderr}`));
        else resolve(JSON.parse(stdout) as CliRun[]);
      },
    );
  });
}

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-cli-sample-'));
const modelDirectory = path.join(root, 'qwen');
after(() => rmSync(root, { recursive: true, force: true }));

const ids = [116, 257, 273, 270, 102, 32];
const sampleArgv = [
  'sample',
  '--model',
  modelDirectory,
  '--prompt',
  'the sum of 12 and 3?',
  '--chat',
  '--max-tokens',
  '8',
  '--seed',
  '4',
  '--json',
];
let runs: CliRun[] = [];
const adapterDirectory = path.join(root, 'adapter');
const exportDirectory = path.join(root, 'exported');
let adapted: Float32Array;
const probe = [287, 116, 257, 273, 270, 288];

function logitsOf(model: TransformerLM): Float32Array {
  return noGrad(() =>
    tidy(() =>
      model.forward({ ids: Int32Array.from(probe), batch: 1, length: probe.length }).data.slice(),
    ),
  );
}

before(async () => {
  writeHuggingFaceFixture(modelDirectory, { modelType: 'qwen2' });
  const { model } = await loadModel(modelDirectory);
  const adapters = await attachLora(
    model,
    loraConfigSchema.parse({ rank: 2, targetModules: ['q_proj', 'up_proj'] }),
    new RandomGenerator(1),
  );
  const random = new RandomGenerator(2);
  for (const adapter of adapters.values())
    adapter.loraB.data.forEach((_value, index, data) => {
      data[index] = random.normal() * 0.3;
    });
  adapted = logitsOf(model);
  await savePeftAdapter(model, adapterDirectory);
  runs = await runCliBatch([
    ['score', '--model', modelDirectory, '--ids', ids.join(','), '--json'],
    ['score', '--model', modelDirectory, '--text', 'the sum', '--json'],
    ['score', '--model', modelDirectory, '--text', 'the sum'],
    ['score', '--model', modelDirectory, '--ids', '1,x'],
    ['score', '--model', modelDirectory, '--ids', '1,290'],
    sampleArgv,
    sampleArgv,
    ['sample', '--model', path.join(root, 'absent'), '--prompt', 'x'],
    [
      'sample',
      '--model',
      modelDirectory,
      '--prompt',
      'the sum',
      '--max-tokens',
      '4',
      '--temperature',
      '0',
    ],
    [
      'export',
      '--model',
      modelDirectory,
      '--adapter',
      adapterDirectory,
      '--out',
      exportDirectory,
      '--json',
    ],
    ['export', '--model', modelDirectory, '--out', root],
  ]);
});

describe('teamtr sample, score and export', () => {
  test("score --ids --json: ids, tokens and each token's log-probability given the ones before", async () => {
    const { code, stdout, stderr } = runs[0]!;
    assert.equal(code, 0, stderr);
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, 1, 'exactly one JSON object on stdout');
    const result = JSON.parse(lines[0]!);
    assert.deepEqual(result.ids, ids);
    assert.deepEqual(result.tokens, ['t', 'he', 'Ġsum', 'Ġo', 'f', 'Ġ']);
    assert.equal(result.logProbs[0], null);
    const { model } = await loadModel(modelDirectory);
    const [expected] = scoreToArrays(model, [
      { context: ids.slice(0, 1), completion: ids.slice(1) },
    ]);
    assert.equal(result.logProbs.length, ids.length);
    result.logProbs
      .slice(1)
      .forEach((value: number, index: number) =>
        assert.ok(Math.abs(value - expected!.logProbs[index]!) < 1e-6),
      );
  });

  test('score --text tokenizes; bad input is a clear error', () => {
    const [, text, human, bad, outside] = runs;
    assert.equal(text!.code, 0, text!.stderr);
    assert.deepEqual(JSON.parse(text!.stdout).ids, [116, 257, 273]);
    assert.match(human!.stdout, /total log-prob -?\d+\.\d+ over 2 tokens \(perplexity/);
    assert.equal(bad!.code, 2);
    assert.match(bad!.stderr, /--ids must be comma-separated token ids .*\(bad: "x"\)/);
    assert.match(outside!.stderr, /token id 290 is outside the vocabulary \(0 to 288\)/);
  });

  test('sample --chat --json is seeded and reproducible; plain sampling streams text', () => {
    const [first, second, missing, streamed] = runs.slice(5);
    assert.equal(first!.code, 0, first!.stderr);
    const result = JSON.parse(first!.stdout);
    assert.equal(result.promptIds[0], 287, 'the chat template opens with <|im_start|>');
    assert.ok(result.tokens.length >= 1 && result.tokens.length <= 8);
    assert.equal(result.logProbs.length, result.tokens.length);
    assert.deepEqual(JSON.parse(second!.stdout), result);
    assert.equal(missing!.code, 2);
    assert.match(missing!.stderr, /model ".*absent" not found/);
    assert.equal(streamed!.code, 0, streamed!.stderr);
    assert.match(streamed!.stderr, /\[\d tokens, finish: (stop|length)\]/);
  });

  test('export --model --adapter writes a merged Hugging Face directory; a foreign --out is refused', async () => {
    const [exported, refused] = runs.slice(9);
    assert.equal(exported!.code, 0, exported!.stderr);
    const result = JSON.parse(exported!.stdout);
    assert.deepEqual(result.files, [
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const reloaded = await loadModel(exportDirectory);
    // The count reported is the file's: the adapters are merged into it, not added to it.
    const header = await readSafetensorsHeader(path.join(exportDirectory, 'model.safetensors'));
    const inFile = [...header.tensors.values()].reduce(
      (sum, entry) => sum + entry.shape.reduce((product, size) => product * size, 1),
      0,
    );
    assert.equal(result.parameters, inFile);
    const logits = logitsOf(reloaded.model);
    assert.ok(logits.every((value, index) => Math.abs(value - adapted[index]!) < 1e-5));
    assert.equal(refused!.code, 2);
    assert.match(
      refused!.stderr,
      /is a non-empty directory that is not a model directory; refusing to replace it/,
    );
  });
});
