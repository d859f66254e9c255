import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { roundToBfloat16 } from '../../backend/bfloat16.js';
import type { TransformerLM } from '../../nn/transformer.js';
import type { NamedArray } from '../../util/named-array.js';
import { loadModel } from '../load.js';
import { fixtureTensors, writeHuggingFaceFixture } from '../test-support/huggingface-fixture.js';
import { applyWeightsDtype } from '../weights-dtype.js';

/**
 * A frozen model kept in bfloat16 loads straight into it, tensor by tensor: the same bits as
 * loading in float32 and rounding afterwards, without the whole model in float32 first.
 */

const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-hf-bf16-'));
after(() => rmSync(root, { recursive: true, force: true }));
let counter = 0;
const freshDirectory = () => path.join(root, `model-${counter++}`);

/** A safetensors file storing every tensor in BF16 (rounded to nearest), as `save_pretrained` of a bf16 model does. */
function encodeBfloat16Safetensors(tensors: readonly NamedArray[]): Buffer {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const tensor of tensors) {
    header[tensor.name] = {
      dtype: 'BF16',
      shape: tensor.shape,
      data_offsets: [offset, offset + 2 * tensor.data.length],
    };
    offset += 2 * tensor.data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  const data = tensors.map((tensor) => Buffer.from(roundToBfloat16(tensor.data).buffer));
  return Buffer.concat([length, Buffer.from(json), ...data]);
}

function storage(model: TransformerLM): Array<{ name: string; dtype: string; bits: number[] }> {
  return model.namedParameters().map(({ name, tensor }) => ({
    name,
    dtype: tensor.dtype,
    bits: Array.from(tensor.bfloat16 ?? new Uint32Array(tensor.data.buffer.slice(0))),
  }));
}

describe('loading frozen matrices straight into bfloat16', () => {
  for (const modelType of ['llama', 'gpt2'] as const) {
    test(`${modelType}: the same bits as rounding a float32 load, matrices only, frozen`, async () => {
      const directory = freshDirectory();
      writeHuggingFaceFixture(directory, { modelType, shards: 2 });
      const direct = await loadModel(directory, { frozenMatrices: 'bfloat16' });
      const rounded = await loadModel(directory);
      applyWeightsDtype(rounded.model, 'bfloat16', { trainsFully: false, where: 'test' });
      assert.deepEqual(storage(direct.model), storage(rounded.model));
      for (const { name, tensor } of direct.model.namedParameters())
        assert.equal(tensor.dtype, tensor.rank === 2 ? 'bfloat16' : 'float32', name);
      assert.equal(direct.model.trainableParameters().length, 0);
      direct.model.destroy();
      rounded.model.destroy();
    });
  }

  test('auto keeps a BF16 file in bfloat16 (exactly its bits) and a float32 file in float32', async () => {
    const bf16 = freshDirectory();
    writeHuggingFaceFixture(bf16, { modelType: 'llama' });
    const tensors = fixtureTensors('llama');
    writeFileSync(path.join(bf16, 'model.safetensors'), encodeBfloat16Safetensors(tensors));
    const fromBf16 = await loadModel(bf16, { frozenMatrices: 'auto' });
    const embedding = tensors.find((tensor) => tensor.name === 'model.embed_tokens.weight')!;
    assert.deepEqual(fromBf16.model.tokenEmbedding.bfloat16, roundToBfloat16(embedding.data));
    assert.equal(fromBf16.model.blocks[0]!.attentionNorm.weight.dtype, 'float32');

    const f32 = freshDirectory();
    writeHuggingFaceFixture(f32, { modelType: 'llama' });
    const fromF32 = await loadModel(f32, { frozenMatrices: 'auto' });
    assert.ok(fromF32.model.namedParameters().every(({ tensor }) => tensor.dtype === 'float32'));
    const plain = await loadModel(f32);
    assert.ok(plain.model.tokenEmbedding.requiresGrad, 'the default load is unchanged: trainable');
    for (const loaded of [fromBf16, fromF32, plain]) loaded.model.destroy();
  });
});
