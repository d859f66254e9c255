import path from 'node:path';
import { saveCheckpoint } from '../../io/checkpoint.js';
import type { ModelConfigInput } from '../../nn/config.js';
import { TransformerLM } from '../../nn/transformer.js';
import { CharTokenizer } from '../../tokenizer/char.js';
import { RandomGenerator } from '../../util/random.js';

/** The fixture team's alphabet (test-support/tiny-team.ts), for models that share its tokenizer. */
export const fixtureAlphabet = 'ab\n:ABC';

export interface SwapModels {
  /** Same tokenizer as the fixture team, larger hidden size: KL alignment is defined. */
  wide: string;
  /** Another alphabet (same characters in another order, plus one): token ids differ, text aligns. */
  otherAlphabet: string;
  /** A tokenizer without the task's letters: cannot play any role. */
  noLetters: string;
  /** Same tokenizer, but a context window too short for the role. */
  shortContext: string;
}

async function saveModel(
  directory: string,
  alphabet: string,
  config: Omit<ModelConfigInput, 'vocabSize'>,
  seed: string,
): Promise<string> {
  const tokenizer = new CharTokenizer({ alphabet });
  const model = new TransformerLM(
    { ...config, vocabSize: tokenizer.vocabSize } as ModelConfigInput,
    new RandomGenerator(seed),
  );
  // Sharp random policies, like the fixture team's (initStd 6).
  for (const { tensor } of model.namedParameters())
    tensor.data.forEach((value, position) => (tensor.data[position] = value * 6));
  await saveCheckpoint(directory, {
    config: model.config,
    parameters: model.stateDict(),
    tokenizer: tokenizer.toJSON(),
  });
  model.destroy();
  return directory;
}

/** Incoming models for swap tests, saved as teamtr checkpoints under `directory`. */
export async function createSwapModels(directory: string): Promise<SwapModels> {
  const small = {
    architecture: 'llama' as const,
    hiddenSize: 16,
    layers: 1,
    heads: 2,
    intermediateSize: 32,
    maxPositions: 64,
    tieEmbeddings: true,
  };
  return {
    wide: await saveModel(
      path.join(directory, 'swap-wide'),
      fixtureAlphabet,
      { ...small, hiddenSize: 24, intermediateSize: 48 },
      'swap/wide',
    ),
    otherAlphabet: await saveModel(
      path.join(directory, 'swap-other-alphabet'),
      'C:BA\nbaz',
      small,
      'swap/other',
    ),
    noLetters: await saveModel(
      path.join(directory, 'swap-no-letters'),
      '\n:ABCxyz',
      small,
      'swap/none',
    ),
    shortContext: await saveModel(
      path.join(directory, 'swap-short-context'),
      fixtureAlphabet,
      { ...small, maxPositions: 6 },
      'swap/short',
    ),
  };
}
