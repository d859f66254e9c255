import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkpointFiles, loadCheckpoint } from '../io/checkpoint.js';
import { expectShapes } from '../io/expect-shapes.js';
import { FileFormatError, TeamtrError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { tokenizerFromJSON } from '../tokenizer/load.js';
import { TransformerLM } from '../nn/transformer.js';
import { huggingFaceFormat } from './huggingface/format.js';
import type { LoadedModel, ModelFormat } from './model-format.js';

/** A model ready to run: the network, its tokenizer and where it came from. */
export type { LoadedModel, ModelFormat } from './model-format.js';

/** teamtr's own checkpoint layout (config.json in our schema + tokenizer.json). */
export const teamtrCheckpointFormat: ModelFormat = {
  name: 'teamtr checkpoint',
  recognizes: (directory) =>
    existsSync(path.join(directory, checkpointFiles.tokenizer)) &&
    existsSync(path.join(directory, checkpointFiles.model)) &&
    !existsSync(path.join(directory, 'tokenizer_config.json')),
  async load(directory) {
    const checkpoint = await loadCheckpoint(directory);
    if (checkpoint.tokenizer === undefined) {
      throw new FileFormatError(
        directory,
        `no ${checkpointFiles.tokenizer}: a teamtr model checkpoint needs its tokenizer`,
      );
    }
    const tokenizer = tokenizerFromJSON(
      checkpoint.tokenizer,
      path.join(directory, checkpointFiles.tokenizer),
    );
    const model = new TransformerLM(checkpoint.config, new RandomGenerator(0));
    expectShapes(
      checkpoint.parameters,
      new Map(model.namedParameters().map(({ name, tensor }) => [name, tensor.shape])),
      path.join(directory, checkpointFiles.model),
    );
    model.loadStateDict(checkpoint.parameters);
    if (tokenizer.vocabSize > model.config.vocabSize) {
      throw new FileFormatError(
        directory,
        `the tokenizer has ${tokenizer.vocabSize} tokens but the model only ${model.config.vocabSize} embedding rows`,
      );
    }
    const optimizerState = checkpoint.optimizer
      ? {
          step: Number(checkpoint.optimizer.scalars.step ?? 0),
          moments: checkpoint.optimizer.state,
        }
      : null;
    return { model, tokenizer, source: directory, optimizerState, extra: checkpoint.extra ?? null };
  },
};

export const modelFormats: ModelFormat[] = [huggingFaceFormat, teamtrCheckpointFormat];

/** Where the built-in tiny models live: `<package>/models`. */
export function builtinModelsDirectory(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'models');
}

/** `builtin:arithmetic-chain/role-0` → its directory; any other spec is a path. */
export function resolveModelSpec(spec: string): string {
  if (spec.startsWith('builtin:'))
    return path.join(builtinModelsDirectory(), spec.slice('builtin:'.length));
  return path.resolve(spec);
}

/** Loads a model directory in any known format, with an error listing them when none fits. */
export async function loadModel(spec: string): Promise<LoadedModel> {
  const directory = resolveModelSpec(spec);
  if (!existsSync(directory)) {
    const hint = spec.startsWith('builtin:')
      ? ' (run `teamtr pretrain` to build the built-in models)'
      : '';
    throw new TeamtrError(`model "${spec}" not found at ${directory}${hint}`);
  }
  const format = modelFormats.find((candidate) => candidate.recognizes(directory));
  if (!format) {
    throw new FileFormatError(
      directory,
      `not a model directory of a known format (known: ${modelFormats.map((entry) => entry.name).join(', ')})`,
    );
  }
  return format.load(directory);
}
