import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyLora } from '../nn/lora.js';
import { planTrainingPrefixes } from '../nn/shared-prefix-gradients.js';
import { TransformerLM } from '../nn/transformer.js';
import { crossEntropy, noGrad, tidy } from '../tensor/index.js';
import { rollout } from '../team/rollout.js';
import { tinyTask, tinyTeam } from '../team/test-support/tiny-team.js';
import { gradientStep } from '../trainer/update/local/gradient-step.js';
import { clippedSettings } from '../trainer/test-support/trust-region-settings.js';
import { collectUnitTokens } from '../trainer/update/token-grid.js';
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

  test('a gradient step runs a prompt its group shares once: fewer rows with gradients', async () => {
    const team = tinyTeam({ agents: 2, seed: 11, initStd: 5 });
    const model = team.agents[1]!.policy.model!;
    applyLora(model, {
      rank: 2,
      alpha: 4,
      targetModules: ['queryProjection', 'valueProjection', 'downProjection'],
      random: new RandomGenerator(4),
    });
    const task = tinyTask(2);
    const batch = await rollout({
      team,
      task,
      problems: task.split('train', { seed: 0, count: 2 }),
      groupSize: 4,
      seed: 'layer rows',
    });
    const tokens = collectUnitTokens(batch, [1]);
    const advantages = Float64Array.from({ length: tokens.rows }, (_unused, row) => row % 3);
    const rows = new LayerRows([model]);
    const stepRows = (sharePrefixes: boolean) => {
      rows.withGradients = 0;
      gradientStep(model, tokens, advantages, clippedSettings(1, 1).policyLoss, {
        sharePrefixes,
      });
      return rows.withGradients;
    };
    const plain = stepRows(false);
    const shared = stepRows(true);
    rows.detach();
    const { items } = tokens;
    const sequence = (index: number) =>
      items[index]!.context.length + items[index]!.completion.length;
    const length = Math.max(...items.map((_item, index) => sequence(index)));
    assert.equal(plain, items.length * length);
    // The group's prompt once per prefix, then every item's own tokens after it.
    const plan = planTrainingPrefixes(model, items)!;
    const prefixLength = Math.max(...plan.prefixes.map((prefix) => prefix.length));
    const ownLength = Math.max(
      ...items.map((_item, index) => sequence(index) - plan.items[index]!.tokens),
    );
    assert.equal(shared, plan.prefixes.length * prefixLength + items.length * ownLength);
    assert.ok(shared < 0.9 * plain, `${shared} rows vs ${plain}`);
    assert.equal(rows.withoutGradients, 0);
  });
});
