import { applyLora } from '../nn/lora.js';
import { scoreCompletions, type ScoringItem } from '../nn/score.js';
import type { TransformerLM } from '../nn/transformer.js';
import { tokenKl } from '../rl/index.js';
import { noGrad, tidy } from '../tensor/index.js';
import { ReferenceDistributions } from '../trainer/update/local/reference-distributions.js';
import { RandomGenerator } from '../util/random.js';
import { medianSeconds, type WorkloadContext, type WorkloadFigure } from './context.js';
import { forwardFlopsPerToken, throughput } from './flops.js';
import { smolLM2Lora, smolLM2Shape, withSmolLM2 } from './real-model.js';

const sequences = 16;
const sequenceTokens = 128;

/**
 * The trust region's exact KL check, as its KlMeter does it (src/trainer/trust-region.ts): every
 * chunk of π_old / π_current log-distributions that ReferenceDistributions yields (recomputed
 * from the saved adapters when the whole batch exceeds its memory budget, as here: 2,032 × 49,152
 * floats is 400 MB), then tokenKl over the full vocabulary. Returns the per-token KL.
 */
function exactTokenKl(reference: ReferenceDistributions, totalTokens: number): Float32Array {
  const perToken = new Float32Array(totalTokens);
  for (const pair of reference.pairs()) {
    const perPosition = tokenKl({
      oldLogProbsFull: pair.old,
      newLogProbsFull: pair.current,
      positions: pair.chunk.positions,
      vocab: smolLM2Shape.vocabSize,
    });
    perToken.set(perPosition, pair.chunk.start);
    pair.release();
  }
  return perToken;
}

/** A small random move of every trainable parameter: the adapters after an optimizer step. */
function perturbAdapters(model: TransformerLM, random: RandomGenerator): void {
  for (const { tensor } of model.trainableParameters()) {
    const values = tensor.data;
    for (let index = 0; index < values.length; index++) values[index]! += 0.01 * random.normal();
  }
}

/**
 * Scoring and the exact KL of a LoRA agent's batch at SmolLM2's shape: 16 sequences of 128
 * tokens, one context token and 127 scored completion tokens each.
 * - score: per-token log-probs without gradients (`scoreCompletions`, the trainer's scoring
 *   path), in scored tokens per second;
 * - exact-kl: the trust region's check after a step, KL(π_old ‖ π_new) over the whole
 *   vocabulary at every scored token, in scored tokens per second.
 * Both fractions of the bound count one forward pass per scored token (2·parameters): the least
 * a KL check can cost (π_new must be computed; π_old could in principle be kept).
 */
export function scoringAndExactKl(context: WorkloadContext): WorkloadFigure[] {
  return withSmolLM2('smollm2-score-kl', (model) => {
    const random = new RandomGenerator('smollm2-score-kl');
    applyLora(model, { ...smolLM2Lora, random });
    const vocab = smolLM2Shape.vocabSize;
    const items: ScoringItem[] = Array.from({ length: sequences }, () => ({
      context: [random.nextInt(vocab)],
      completion: Array.from({ length: sequenceTokens - 1 }, () => random.nextInt(vocab)),
    }));
    const scored = sequences * (sequenceTokens - 1);
    const flops = scored * forwardFlopsPerToken(smolLM2Shape);
    const scoreSeconds = medianSeconds(
      () => noGrad(() => tidy(() => scoreCompletions(model, items).logProbs.data[0])),
      context.warmup,
      context.repeats,
    );
    const reference = new ReferenceDistributions(model, items);
    perturbAdapters(model, random);
    let perToken: Float32Array = new Float32Array(0);
    const klSeconds = medianSeconds(
      () => {
        perToken = exactTokenKl(reference, scored);
      },
      context.warmup,
      context.repeats,
    );
    // A check that measured nothing (no move, or a broken path) would make the figure a lie.
    if (!perToken.every((kl) => Number.isFinite(kl)) || !perToken.some((kl) => kl > 0))
      throw new Error('exact-KL workload: the per-token KL is not finite and positive');
    return [
      throughput('smollm2-135m-shape-score', {
        units: scored,
        seconds: scoreSeconds,
        flops,
        unit: 'tokens/s',
      }),
      throughput('smollm2-135m-shape-exact-kl', {
        units: scored,
        seconds: klSeconds,
        flops,
        unit: 'tokens/s',
      }),
    ];
  });
}
