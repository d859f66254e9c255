import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TransformerLM } from '../nn/transformer.js';
import { crossEntropy, noGrad, tidy } from '../tensor/index.js';
import { RandomGenerator } from '../util/random.js';
import { layerMatrixWeights } from './flops.js';
import { LayerRows, stageHeadFlops, stageLayerFlops } from './layer-rows.js';

const config = {
  architecture: 'llama',
  vocabSize: 11,
  hiddenSize: 16,
  layers: 2,
  heads: 2,
  kvHeads: 1,
  intermediateSize: 24,
  maxPositions: 32,
} as const;

describe('layer rows of a stage', () => {
  test('counts every input row and every head row, split by gradients, and stops once detached', () => {
    const first = new TransformerLM(config, new RandomGenerator(1));
    const second = new TransformerLM(config, new RandomGenerator(2));
    const rows = new LayerRows([first, second, first]);
    const ids = Int32Array.from({ length: 3 * 5 }, (_unused, index) => index % 11);
    tidy(() => crossEntropy(first.forward({ ids, batch: 3, length: 5 }), ids).backward());
    noGrad(() => tidy(() => second.forward({ ids, batch: 5, length: 3 })));
    noGrad(() => tidy(() => first.forward({ ids: ids.subarray(0, 4), batch: 2, length: 2 })));
    // Logits only where asked (scoring's completion rows): the head runs on those.
    const selected = Int32Array.from([0, 4]);
    noGrad(() => tidy(() => second.forward({ ids, batch: 3, length: 5, rows: selected })));
    // The first model was listed twice but is wrapped once.
    assert.deepEqual([rows.withGradients, rows.withoutGradients], [15, 34]);
    assert.deepEqual([rows.headWithGradients, rows.headWithoutGradients], [15, 21]);
    const weights = layerMatrixWeights(config);
    assert.equal(stageLayerFlops(rows, weights), 2 * weights * (34 + 2 * 15));
    const headWeights = config.vocabSize * config.hiddenSize;
    assert.equal(stageHeadFlops(rows, headWeights), 2 * headWeights * (21 + 2 * 15));
    rows.detach();
    noGrad(() => tidy(() => first.forward({ ids, batch: 3, length: 5 })));
    assert.deepEqual([rows.withGradients, rows.withoutGradients], [15, 34]);
    assert.deepEqual([rows.headWithGradients, rows.headWithoutGradients], [15, 21]);
  });
});
