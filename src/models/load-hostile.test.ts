import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { saveCheckpoint } from '../io/checkpoint.js';
import { writeSafetensors } from '../io/safetensors.js';
import { resolveModelConfig } from '../nn/config.js';
import { TransformerLM } from '../nn/transformer.js';
import { CharTokenizer } from '../tokenizer/char.js';
import { RandomGenerator } from '../util/random.js';
import { runBounded } from '../util/test-support/bounded-child.js';
import { loadModel } from './load.js';
import { parameterCount } from './memory-estimate.js';
import { writeSparseCheckpoint } from './test-support/sparse-checkpoint.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

async function tinyCheckpoint(): Promise<string> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-hostile-'));
  cleanup.push(directory);
  const tokenizer = new CharTokenizer({ alphabet: 'ab' });
  const model = new TransformerLM(
    {
      architecture: 'llama',
      vocabSize: tokenizer.vocabSize,
      hiddenSize: 8,
      layers: 1,
      heads: 2,
      intermediateSize: 16,
      maxPositions: 16,
    },
    new RandomGenerator(0),
  );
  await saveCheckpoint(directory, {
    config: model.config,
    parameters: model.stateDict(),
    tokenizer: tokenizer.toJSON(),
  });
  model.destroy();
  return directory;
}

function editConfig(directory: string, change: (config: Record<string, unknown>) => void): void {
  const file = path.join(directory, 'config.json');
  const config = JSON.parse(readFileSync(file, 'utf8'));
  change(config);
  writeFileSync(file, JSON.stringify(config));
}

describe('hostile model directories', () => {
  test('absurd sizes in config.json fail at validation, naming the key, before any allocation', async () => {
    for (const [key, value] of [
      ['layers', 10_000_000],
      ['vocabSize', 2_000_000_000],
      ['maxPositions', 1e9],
      ['hiddenSize', 1_000_000],
    ] as const) {
      const directory = await tinyCheckpoint();
      editConfig(directory, (config) => (config[key] = value));
      await assert.rejects(loadModel(directory), new RegExp(`${key}: .*(<=|too big|at most)`), key);
    }
  });

  test('a config that does not match its weight file is refused before the model is built', async () => {
    const directory = await tinyCheckpoint();
    editConfig(directory, (config) => (config.layers = 900));
    await assert.rejects(
      loadModel(directory),
      /config\.json describes a model of \d+ parameters but model\.safetensors holds \d+/,
    );
  });

  test('a model larger than the machine is refused with the figure', async () => {
    const directory = await tinyCheckpoint();
    editConfig(directory, (config) =>
      Object.assign(config, { layers: 1000, hiddenSize: 65536, heads: 512 }),
    );
    await assert.rejects(
      loadModel(directory),
      /needs [\d.]+ GiB for its float32 weights, more than 60% of this machine/,
    );
  });

  test('a checkpoint larger than the machine is refused from its config, before a tensor is read', async () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-sparse-'));
    cleanup.push(directory);
    // 4,000,000 × 1024 embeddings and output head: 32.8 GB of float32 in a sparse file.
    writeSparseCheckpoint(directory, {
      vocabSize: 4_000_000,
      hiddenSize: 1024,
      intermediateSize: 64,
    });
    const loadModule = JSON.stringify(new URL('./load.ts', import.meta.url).href);
    const result = await runBounded({
      setup: `const { loadModel } = await import(${loadModule});`,
      body: `try { await loadModel(${JSON.stringify(directory)}); console.log('loaded'); } catch (error) { console.log(error.name + ': ' + error.message); }`,
      // The refusal must not depend on this machine's memory: 5% of any machine is less.
      env: { TEAMTR_MEMORY_SHARE: '0.05' },
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}: ${result.stderr}`);
    assert.match(
      result.stdout,
      new RegExp(
        `TeamtrError: ${path.join(directory, 'config.json').replace(/[.]/g, '\\.')}: this model needs 30\\.5 GiB for its float32 weights, more than 5% of this machine's`,
      ),
    );
    assert.ok(result.peakRssBytes < 2 ** 30, `peak RSS ${result.peakRssBytes}`);
  });

  test('devices and pipes in a model directory are refused at once, naming the file', async () => {
    const zeroConfig = await tinyCheckpoint();
    rmSync(path.join(zeroConfig, 'config.json'));
    symlinkSync('/dev/zero', path.join(zeroConfig, 'config.json'));
    const pipeWeights = await tinyCheckpoint();
    rmSync(path.join(pipeWeights, 'model.safetensors'));
    execFileSync('mkfifo', [path.join(pipeWeights, 'model.safetensors')]);
    const hfZero = mkdtempSync(path.join(os.tmpdir(), 'teamtr-hf-zero-'));
    cleanup.push(hfZero);
    symlinkSync('/dev/urandom', path.join(hfZero, 'config.json'));
    const loadModule = JSON.stringify(new URL('./load.ts', import.meta.url).href);
    const directories = [zeroConfig, pipeWeights, hfZero];
    const result = await runBounded({
      setup: `const { loadModel } = await import(${loadModule});`,
      body: `for (const directory of ${JSON.stringify(directories)}) { try { await loadModel(directory); console.log('loaded'); } catch (error) { console.log(error.message); } }`,
    });
    assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
    const [zero, pipe, urandom] = result.stdout.trim().split('\n');
    assert.equal(
      zero,
      `${path.join(zeroConfig, 'config.json')}: is a character device (such as /dev/zero), not a regular file; give the path of config.json on disk`,
    );
    assert.match(
      pipe!,
      new RegExp(`^${pipeWeights}/model\\.safetensors: is a named pipe \\(FIFO\\)`),
    );
    assert.match(urandom!, new RegExp(`^${hfZero}/config\\.json: is a character device`));
  });

  test('a missing tokenizer.json is named; a Hub id says teamtr loads local folders only', async () => {
    const directory = await tinyCheckpoint();
    rmSync(path.join(directory, 'tokenizer.json'));
    await assert.rejects(
      loadModel(directory),
      new RegExp(
        `${directory}: no tokenizer\\.json: a teamtr model checkpoint needs its tokenizer`,
      ),
    );
    await assert.rejects(
      loadModel('Qwen/Qwen2.5-0.5B-Instruct'),
      /model "Qwen\/Qwen2\.5-0\.5B-Instruct" not found at .*: teamtr loads models from local folders only, it does not download from the Hugging Face Hub; download it first \(e\.g\. `huggingface-cli download Qwen\/Qwen2\.5-0\.5B-Instruct --local-dir models\/Qwen2\.5-0\.5B-Instruct`\)/,
    );
    await assert.rejects(loadModel('./no/such/model/dir'), /give the path of a model folder/);
  });

  test('NaN or Inf in the weights is refused at load, naming the directory and the weight', async () => {
    const directory = await tinyCheckpoint();
    const loaded = await loadModel(directory);
    const parameters = loaded.model.stateDict();
    parameters[1]!.data[3] = Number.NaN;
    // Written as a damaged file would be: saveCheckpoint itself refuses non-finite weights.
    await writeSafetensors(path.join(directory, 'model.safetensors'), parameters);
    loaded.model.destroy();
    await assert.rejects(
      loadModel(directory),
      new RegExp(
        `${directory}: weight "${parameters[1]!.name.replace(/\./g, '\\.')}" holds a non-finite value \\(NaN at element 3\\)`,
      ),
    );
  });

  test('parameterCount is the number of parameters the model allocates, for every architecture option', () => {
    fc.assert(
      fc.property(
        fc.record({
          architecture: fc.constantFrom('llama' as const, 'gpt2' as const),
          heads: fc.integer({ min: 1, max: 4 }),
          groups: fc.integer({ min: 1, max: 2 }),
          headDim: fc.constantFrom(2, 4),
          layers: fc.integer({ min: 1, max: 3 }),
          intermediateSize: fc.integer({ min: 1, max: 12 }),
          vocabSize: fc.integer({ min: 2, max: 20 }),
          attentionBias: fc.boolean(),
          queryKeyNorm: fc.boolean(),
          tieEmbeddings: fc.boolean(),
        }),
        (options) => {
          const config = resolveModelConfig({
            architecture: options.architecture,
            vocabSize: options.vocabSize,
            hiddenSize: 6,
            layers: options.layers,
            heads: options.heads * options.groups,
            kvHeads: options.heads,
            headDim: options.headDim,
            intermediateSize: options.intermediateSize,
            maxPositions: 8,
            attentionBias: options.attentionBias,
            queryKeyNorm: options.queryKeyNorm,
            tieEmbeddings: options.tieEmbeddings,
          });
          const model = new TransformerLM(config, new RandomGenerator(1));
          const allocated = model
            .namedParameters()
            .reduce((total, { tensor }) => total + tensor.data.length, 0);
          model.destroy();
          assert.equal(parameterCount(config), allocated);
        },
      ),
      { numRuns: 60 },
    );
  });
});
