import { TransformerLM } from '../../nn/transformer.js';
import { LocalPolicy } from '../../team/policy.js';
import type { Team } from '../../team/team.js';
import { CharTokenizer } from '../../tokenizer/char.js';
import { RandomGenerator } from '../../util/random.js';

/** The character tokenizer of the serve tests' tiny models. */
export const charTokenizer = new CharTokenizer();

/** A tiny random character-level model (96 positions), seeded. */
export function charModel(seed: number): TransformerLM {
  return new TransformerLM(
    {
      architecture: 'llama',
      vocabSize: charTokenizer.vocabSize,
      hiddenSize: 16,
      layers: 1,
      heads: 2,
      intermediateSize: 24,
      maxPositions: 96,
    },
    new RandomGenerator(seed),
  );
}

/** A two-agent team of tiny character models: agent i is seeded `seed + i`. */
export function charTeam(
  names: [string, string],
  rolePrompts: [string, string],
  seed: number,
): Team {
  return {
    agents: names.map((name, index) => ({
      name,
      rolePrompt: rolePrompts[index]!,
      speakerTag: `${'AB'[index]}:`,
      policy: new LocalPolicy(charModel(seed + index), charTokenizer),
    })),
    protocol: { turnOrder: [0, 1], answerTurn: 1, permutePerEpisode: false, maxTurnTokens: 8 },
  };
}
