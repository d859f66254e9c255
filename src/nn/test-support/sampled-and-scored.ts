import type { RandomGenerator } from '../../util/random.js';
import { generate, type GeneratedSequence } from '../generate.js';
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
