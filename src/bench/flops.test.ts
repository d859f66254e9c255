import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelConfigInput } from '../nn/config.js';
import { TransformerLM } from '../nn/transformer.js';
import { RandomGenerator } from '../util/random.js';
import {
  forwardFlopsPerToken,
  headWeights,
  layerMatrices,
  layerMatrixWeights,
  loraForwardFlopsPerToken,
  loraStepFlopsPerToken,
  prefillFlops,
  throughput,
  withFractionsOfBound,
} from './flops.js';
import { smolLM2Lora, smolLM2Shape } from './real-model.js';

/** 2 layers, d 4, 2 query heads sharing 1 key/value head (head size 2), MLP 6, vocabulary 10. */
const tiny: ModelConfigInput = {
  architecture: 'llama',
  vocabSize: 10,
  hiddenSize: 4,
  layers: 2,
  heads: 2,
  kvHeads: 1,
  intermediateSize: 6,
  maxPositions: 16,
  tieEmbeddings: true,
};

describe('FLOPs per token from the model config', () => {
  it('counts a tiny grouped-query llama by hand', () => {
    // Per layer: query 4·4 + key 4·2 + value 4·2 + output 4·4 + gate, up, down 3·(4·6) = 120.
    assert.equal(layerMatrixWeights(tiny), 2 * 120);
    assert.equal(headWeights(tiny), 10 * 4);
    assert.equal(forwardFlopsPerToken(tiny), 2 * (240 + 40));
    // A 3-token prompt: every position through the layers, the head at the last one only.
    assert.equal(prefillFlops(tiny, 3), 2 * (3 * 240 + 40));
    // Rank 2 on query (4 → 4) and value (4 → 2): 2·(4 + 4) + 2·(4 + 2) = 28 per layer.
    const lora = { rank: 2, targetModules: ['queryProjection', 'valueProjection'] };
    assert.equal(loraStepFlopsPerToken(tiny, lora), 4 * 280 + 6 * 2 * 28);
    assert.equal(loraForwardFlopsPerToken(tiny, lora), 2 * 280 + 2 * 2 * 28);
  });

  it('covers every weight of the model except its norms', () => {
    const model = new TransformerLM(tiny, new RandomGenerator(0));
    try {
      const norms = (2 * 2 + 1) * 4; // two per layer and the final one, hidden size each
      assert.equal(model.parameterCount(), layerMatrixWeights(tiny) + headWeights(tiny) + norms);
    } finally {
      model.destroy();
    }
  });

  it('has no gate matrix without SwiGLU', () => {
    const gpt2 = { ...tiny, architecture: 'gpt2' as const, kvHeads: 2 };
    assert.equal(layerMatrices(gpt2).gateProjection, undefined);
    // query, key, value, output 4·4 each, up and down 4·6 each.
    assert.equal(layerMatrixWeights(gpt2), 2 * (4 * 16 + 2 * 24));
  });

  it('gives SmolLM2-135M 269 MFLOP per generated token and 541 per LoRA-trained token', () => {
    assert.equal(forwardFlopsPerToken(smolLM2Shape), 268_959_744);
    assert.equal(loraStepFlopsPerToken(smolLM2Shape, smolLM2Lora), 540_684_288);
    assert.equal(loraForwardFlopsPerToken(smolLM2Shape, smolLM2Lora), 269_881_344);
  });

  it('names the matrices when a LoRA target is unknown', () => {
    assert.throws(
      () => loraStepFlopsPerToken(tiny, { rank: 2, targetModules: ['qProj'] }),
      /unknown target module "qProj".*queryProjection/,
    );
  });
});

describe('fractions of the bound', () => {
  it('follow each throughput, the achieved GFLOP/s over the bound', () => {
    const work = throughput('work', { units: 100, seconds: 2, flops: 4e9, unit: 'tokens/s' });
    assert.deepEqual(work, { name: 'work', value: 50, unit: 'tokens/s', achievedGflops: 2 });
    const count = { name: 'count', value: 7, unit: 'M' };
    assert.deepEqual(withFractionsOfBound([count, work], 10), [
      count,
      { name: 'work', value: 50, unit: 'tokens/s' },
      { name: 'work-of-sgemm4096', value: 0.2, unit: 'x' },
    ]);
  });
});
