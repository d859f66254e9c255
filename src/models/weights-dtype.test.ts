import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TransformerLM } from '../nn/transformer.js';
import { applyLora } from '../nn/lora.js';
import { agentConfigSchema } from '../trainer/config/train-config.js';
import { ConfigError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { roundToBfloat16, widenBfloat16 } from '../backend/bfloat16.js';
import { applyWeightsDtype, holdsBfloat16Values, parseWeightsDtype } from './weights-dtype.js';

const config = {
  architecture: 'llama',
  vocabSize: 20,
  hiddenSize: 16,
  layers: 1,
  heads: 2,
  kvHeads: 1,
  intermediateSize: 24,
  maxPositions: 16,
} as const;

function dtypes(model: TransformerLM): Record<string, string> {
  return Object.fromEntries(
    model.namedParameters().map(({ name, tensor }) => [name, tensor.dtype]),
  );
}

describe('weightsDtype', () => {
  test('bfloat16 on a frozen model: every matrix in bfloat16, vectors in float32', () => {
    const model = new TransformerLM(config, new RandomGenerator(1));
    applyWeightsDtype(model, 'bfloat16', { trainsFully: false, where: 'test' });
    const stored = dtypes(model);
    assert.equal(stored['tokenEmbedding'], 'bfloat16');
    assert.equal(stored['blocks.0.feedForward.downProjection.weight'], 'bfloat16');
    assert.equal(stored['blocks.0.attentionNorm.weight'], 'float32');
    assert.equal(model.trainableParameters().length, 0);
    model.destroy();
  });

  test('bfloat16 on a LoRA model: the base in bfloat16, the adapters float32 and trainable', () => {
    const model = new TransformerLM(config, new RandomGenerator(2));
    applyLora(model, {
      rank: 2,
      alpha: 4,
      targetModules: ['queryProjection'],
      random: new RandomGenerator(3),
    });
    applyWeightsDtype(model, 'bfloat16', { trainsFully: false, where: 'test' });
    const stored = dtypes(model);
    assert.equal(stored['blocks.0.attention.queryProjection.weight'], 'bfloat16');
    assert.equal(stored['blocks.0.attention.queryProjection.loraA'], 'float32');
    assert.deepEqual(
      model.trainableParameters().map(({ name }) => name),
      ['blocks.0.attention.queryProjection.loraA', 'blocks.0.attention.queryProjection.loraB'],
    );
    model.destroy();
  });

  test('float32 changes nothing; a fully trained model is refused', () => {
    const model = new TransformerLM(config, new RandomGenerator(4));
    applyWeightsDtype(model, 'float32', { trainsFully: true, where: 'test' });
    applyWeightsDtype(model, undefined, { trainsFully: true, where: 'test' });
    assert.ok(Object.values(dtypes(model)).every((dtype) => dtype === 'float32'));
    assert.throws(
      () => applyWeightsDtype(model, 'bfloat16', { trainsFully: true, where: 'agents[0]' }),
      (error: unknown) => error instanceof ConfigError && /frozen weights only/.test(error.message),
    );
    model.destroy();
  });

  test('auto: bfloat16 exactly when the weights are bfloat16 values and not all of them train', () => {
    const model = new TransformerLM(config, new RandomGenerator(5));
    applyWeightsDtype(model, 'auto', { trainsFully: false, where: 'test' });
    assert.equal(model.tokenEmbedding.dtype, 'float32', 'float32 values are not rounded');
    for (const { tensor } of model.namedParameters()) {
      if (tensor.rank === 2) tensor.assignFloat32(widenBfloat16(roundToBfloat16(tensor.data)));
    }
    assert.ok(holdsBfloat16Values(model));
    const before = model.stateDict();
    applyWeightsDtype(model, 'auto', { trainsFully: true, where: 'test' });
    assert.equal(model.tokenEmbedding.dtype, 'float32', 'a fully trained model stays float32');
    applyWeightsDtype(model, 'auto', { trainsFully: false, where: 'test' });
    assert.equal(model.tokenEmbedding.dtype, 'bfloat16');
    assert.deepEqual(model.stateDict(), before, 'nothing was rounded');
    model.destroy();
  });

  test('the flag parses and lists the choices', () => {
    assert.equal(parseWeightsDtype(undefined), 'auto');
    assert.equal(parseWeightsDtype('bfloat16'), 'bfloat16');
    assert.throws(() => parseWeightsDtype('fp16'), /valid: float32, bfloat16, auto/);
  });

  test('the agent schema refuses bfloat16 for an agent that trains all of its weights', () => {
    const issues = (agent: Record<string, unknown>) => {
      const parsed = agentConfigSchema.safeParse({ name: 'a', model: 'builtin:x/y', ...agent });
      return parsed.success ? [] : parsed.error.issues.map((issue) => issue.path.join('.'));
    };
    assert.deepEqual(issues({ weightsDtype: 'bfloat16' }), ['weightsDtype']);
    assert.deepEqual(issues({ weightsDtype: 'bfloat16', trainable: false }), []);
    assert.deepEqual(issues({ weightsDtype: 'bfloat16', lora: { rank: 4 } }), []);
    assert.deepEqual(issues({ weightsDtype: 'half' }), ['weightsDtype']);
  });
});
