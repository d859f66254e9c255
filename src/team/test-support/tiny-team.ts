import type { Problem, Task } from '../../tasks/index.js';
import { CharTokenizer } from '../../tokenizer/char.js';
import { RandomGenerator } from '../../util/random.js';
import { TransformerLM } from '../../nn/transformer.js';
import { LocalPolicy } from '../policy.js';
import { speakerTagFor } from '../render.js';
import type { Team } from '../team.js';

/**
 * A team of tiny random models over a two-letter alphabet, for tests that need many cheap
 * trajectories with few distinct outcomes. The task rewards answers that end in "a".
 */
export function tinyTask(roles = 3): Task {
  const problems = (count: number, prefix: string): Problem[] =>
    Array.from({ length: count }, (_unused, index) => ({
      id: `${prefix}${index}`,
      prompt: index % 2 ? 'ab' : 'ba',
      answer: 'a',
    }));
  return {
    name: 'tiny',
    description: 'answers ending in "a" are right',
    alphabet: 'ab',
    protocol: {
      roles: Array.from({ length: roles }, (_unused, index) => ({
        name: `r${index}`,
        prompt: '',
        description: '',
      })),
      turnOrder: Array.from({ length: roles }, (_unused, index) => index),
      answerTurn: roles - 1,
      maxTurnChars: 2,
    },
    split: (name, options) => problems(options.count ?? 4, name),
    verify: (_problem, text) => {
      const correct = text.endsWith('a');
      return {
        reward: correct ? 1 : 0,
        correct,
        details: { verifier: 'test', extracted: text, expected: 'a', explanation: '' },
      };
    },
  };
}

export function tinyTeam(options: { agents?: number; seed?: number; initStd?: number } = {}): Team {
  const count = options.agents ?? 3;
  const tokenizer = new CharTokenizer({ alphabet: 'ab\n:ABC' });
  const agents = Array.from({ length: count }, (_unused, index) => {
    const model = new TransformerLM(
      {
        architecture: 'llama',
        vocabSize: tokenizer.vocabSize,
        hiddenSize: 16,
        layers: 1,
        heads: 2,
        intermediateSize: 32,
        maxPositions: 64,
        tieEmbeddings: true,
      },
      new RandomGenerator(`${options.seed ?? 0}/${index}`),
    );
    // Larger weights than the 0.02 init make the random policies far from uniform.
    for (const { tensor } of model.namedParameters())
      tensor.data.forEach(
        (value, position) => (tensor.data[position] = value * (options.initStd ?? 8)),
      );
    return {
      name: `agent${index}`,
      rolePrompt: '',
      speakerTag: speakerTagFor(index),
      policy: new LocalPolicy(model, tokenizer),
    };
  });
  return {
    agents,
    protocol: {
      turnOrder: agents.map((_agent, index) => index),
      answerTurn: count - 1,
      permutePerEpisode: false,
      maxTurnTokens: 2,
    },
  };
}
