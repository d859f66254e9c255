import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tidy } from '../tensor/index.js';
import { RandomGenerator } from '../util/random.js';
import {
  completionDistributionsAndLogProbs,
  logDistributionsAndLogProbsFromHidden,
  scoreCompletions,
  scoreCompletionsKeepingHidden,
  type ScoringItem,
} from './score.js';
import { TransformerLM } from './transformer.js';

const items: ScoringItem[] = Array.from({ length: 6 }, (_unused, index) => ({
  context: Array.from({ length: 4 + index }, (_u, position) => (position * 7 + index) % 23),
  completion: Array.from({ length: 3 + (index % 3) }, (_u, position) => (position * 5 + 2) % 23),
}));

function model(tieEmbeddings: boolean): TransformerLM {
  return new TransformerLM(
    {
      architecture: 'llama',
      vocabSize: 23,
      hiddenSize: 16,
      layers: 2,
      heads: 2,
      kvHeads: 1,
      intermediateSize: 24,
      maxPositions: 32,
      tieEmbeddings,
    },
    new RandomGenerator(tieEmbeddings ? 1 : 2),
  );
}

describe('scoreCompletionsKeepingHidden', () => {
  test('is scoreCompletions bit for bit, log-probs and gradients, with its hidden states', () => {
    for (const tieEmbeddings of [true, false]) {
      const lm = model(tieEmbeddings);
      const gradients = () =>
        lm.trainableParameters().map(({ tensor }) => Float32Array.from(tensor.grad!));
      const upstream = (count: number) =>
        Float32Array.from({ length: count }, (_u, index) => Math.sin(index + 1));
      const plain = tidy(() => {
        const scores = scoreCompletions(lm, items);
        scores.logProbs.backward(upstream(scores.logProbs.size));
        return scores.logProbs.data.slice();
      });
      const plainGradients = gradients();
      lm.zeroGrad();
      const keeping = tidy(() => {
        const scores = scoreCompletionsKeepingHidden(lm, items);
        scores.logProbs.backward(upstream(scores.logProbs.size));
        return { logProbs: scores.logProbs.data.slice(), hidden: scores.hidden };
      });
      assert.deepEqual(keeping.logProbs, plain);
      assert.deepEqual(gradients(), plainGradients);
      // The hidden states give the model's own distributions through the head alone.
      const targets = Int32Array.from(items.flatMap((item) => item.completion));
      assert.equal(keeping.hidden.length, targets.length * 16);
      const fromHidden = logDistributionsAndLogProbsFromHidden(lm, keeping.hidden, targets);
      const direct = completionDistributionsAndLogProbs(lm, items);
      assert.deepEqual(fromHidden.distributions, direct.distributions);
      assert.deepEqual(fromHidden.logProbs, direct.logProbs);
      assert.deepEqual(fromHidden.logProbs, plain);
    }
  });
});
