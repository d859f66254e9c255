import { RandomGenerator } from '../../util/random.js';
import { generate, type GeneratedSequence } from '../generate.js';
import { applyLora, loraLayers } from '../lora.js';
import { scoreToArrays } from '../score.js';
import type { TransformerLM } from '../transformer.js';

/** One generated token: the log-prob recorded while sampling and the one scoring gives it. */
export interface SampledAndScored {
  sequence: number;
  position: number;
  sampled: number;
  scored: number;
}

/**
 * Samples `maxNewTokens` after each prompt, scores the completions with the same model, and
 * pairs every token's two log-probs (the sampled = scored property's tests). Throws if scoring
 * returns another number of tokens than were sampled.
 */
export function sampleThenScore(
  model: TransformerLM,
  options: {
    prompts: number[][];
    maxNewTokens: number;
    random: RandomGenerator;
    stopTokens?: number[];
  },
): { generated: GeneratedSequence[]; pairs: SampledAndScored[] } {
  const generated = generate(model, options);
  const scores = scoreToArrays(
    model,
    options.prompts.map((prompt, index) => ({
      context: prompt,
      completion: generated[index]!.tokens,
    })),
  );
  const pairs = generated.flatMap((sequence, index) => {
    const scored = scores[index]!.logProbs;
    if (scored.length !== sequence.tokens.length)
      throw new Error(
        `sequence ${index}: ${scored.length} scored, ${sequence.tokens.length} sampled`,
      );
    return sequence.logProbs.map((sampled, position) => ({
      sequence: index,
      position,
      sampled,
      scored: scored[position]!,
    }));
  });
  return { generated, pairs };
}

/**
 * Rank-4 LoRA adapters on `model`'s query, value and down projections, their B factors set so
 * they change the outputs, then sampleThenScore: the pairs of a LoRA agent on that base.
 */
export function loraSampledAndScored(
  model: TransformerLM,
  prompts: number[][],
): SampledAndScored[] {
  attachChangingLora(model);
  return sampleThenScore(model, { prompts, maxNewTokens: 20, random: new RandomGenerator(15) })
    .pairs;
}

/**
 * Rank-4 LoRA adapters on `model`'s query, value and down projections, their B factors set so
 * they change the outputs (B starts at zero).
 */
export function attachChangingLora(model: TransformerLM): void {
  applyLora(model, {
    rank: 4,
    alpha: 8,
    targetModules: ['queryProjection', 'valueProjection', 'downProjection'],
    random: new RandomGenerator(14),
  });
  for (const adapter of loraLayers(model).values()) adapter.loraB.data.fill(0.05);
}
