import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { loraLayers } from '../../nn/lora.js';
import { TransformerLM } from '../../nn/transformer.js';
import { noGrad, tidy } from '../../tensor/index.js';
import { CharTokenizer } from '../../tokenizer/char.js';
import { HuggingFaceTokenizer } from '../../tokenizer/huggingface.js';
import { RandomGenerator } from '../../util/random.js';
import { loadModel } from '../load.js';
import { attachLora, loraConfigSchema } from '../lora-config.js';
import { writeHuggingFaceFixture } from '../test-support/huggingface-fixture.js';
import { exportHuggingFaceModel } from './export.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-hf-export-'));
after(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const freshDirectory = () => path.join(root, `dir-${counter++}`);

function logitsOf(model: TransformerLM, ids: readonly number[]): Float32Array {
  return noGrad(() =>
    tidy(() =>
      model.forward({ ids: Int32Array.from(ids), batch: 1, length: ids.length }).data.slice(),
    ),
  );
}

describe('exporting Hugging Face directories', () => {
  test('a LoRA-adapted model exports merged and loads back with the same outputs (single and sharded)', async () => {
    const source = freshDirectory();
    writeHuggingFaceFixture(source, { modelType: 'qwen3' });
    const loaded = await loadModel(source);
    const adapters = await attachLora(
      loaded.model,
      loraConfigSchema.parse({ rank: 3, targetModules: ['q_proj', 'down_proj'] }),
      new RandomGenerator(1),
    );
    const random = new RandomGenerator(2);
    for (const adapter of adapters.values())
      adapter.loraB.data.forEach((_value, index, data) => {
        data[index] = random.normal() * 0.3;
      });
    const ids = loaded.tokenizer.encode('the sum of 12 and 3 is?');
    const adapted = logitsOf(loaded.model, ids);
    for (const maxShardBytes of [undefined, 4096]) {
      const target = freshDirectory();
      await exportHuggingFaceModel(loaded.model, loaded.tokenizer, target, {
        huggingFaceConfig: loaded.huggingFaceConfig,
        generation: loaded.generation,
        maxShardBytes,
      });
      assert.equal(
        existsSync(path.join(target, 'model.safetensors.index.json')),
        maxShardBytes !== undefined,
      );
      const exported = await loadModel(target);
      assert.equal(loraLayers(exported.model).size, 0);
      const config = JSON.parse(readFileSync(path.join(target, 'config.json'), 'utf8'));
      assert.equal(config.model_type, 'qwen3');
      assert.equal(config.transformers_version, '4.46.0', 'keys the engine ignores are kept');
      assert.deepEqual({ ...exported.model.config }, { ...loaded.model.config });
      const again = logitsOf(exported.model, ids);
      assert.ok(again.every((value, index) => Math.abs(value - adapted[index]!) < 1e-5));
      assert.deepEqual(exported.generation?.stopTokenIds, [288, 286]);
      assert.deepEqual(
        exported.tokenizer.encode('héllo <|im_end|>'),
        loaded.tokenizer.encode('héllo <|im_end|>'),
      );
    }
    assert.equal(loraLayers(loaded.model).size, 4, 'exporting leaves the adapters in place');
    assert.deepEqual(logitsOf(loaded.model, ids), adapted);
  });

  test('a teamtr character-tokenizer model exports to a tokenizer.json that tokenizes identically', async () => {
    const tokenizer = new CharTokenizer();
    const model = new TransformerLM(
      {
        architecture: 'gpt2',
        vocabSize: tokenizer.vocabSize,
        hiddenSize: 12,
        layers: 1,
        heads: 3,
        intermediateSize: 20,
        maxPositions: 48,
        tieEmbeddings: true,
      },
      new RandomGenerator(3),
    );
    const target = freshDirectory();
    await exportHuggingFaceModel(model, tokenizer, target);
    const exported = await loadModel(target);
    assert.ok(exported.tokenizer instanceof HuggingFaceTokenizer);
    const text = 'Q: 12+3?\nA: {15} é~';
    assert.deepEqual(exported.tokenizer.encode(text), tokenizer.encode(text));
    const ids = [tokenizer.bosId, ...tokenizer.encode('Q: 2+2?\nA: 4'), tokenizer.eosId];
    assert.equal(exported.tokenizer.decode(ids), tokenizer.decode(ids));
    assert.equal(
      exported.tokenizer.decode(ids, { skipSpecialTokens: true }),
      tokenizer.decode(ids, { skipSpecialTokens: true }),
    );
    assert.deepEqual(
      [
        exported.tokenizer.bosId,
        exported.tokenizer.eosId,
        exported.tokenizer.padId,
        exported.tokenizer.unkId,
      ],
      [1, 2, 0, 3],
    );
    assert.deepEqual(logitsOf(exported.model, ids), logitsOf(model, ids));
    const config = JSON.parse(readFileSync(path.join(target, 'config.json'), 'utf8'));
    assert.deepEqual([config.model_type, config.n_embd, config.eos_token_id], ['gpt2', 12, 2]);
  });
});
