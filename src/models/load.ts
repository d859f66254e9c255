import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkpointFiles, loadCheckpoint, loadCheckpointConfig } from '../io/checkpoint.js';
import { readSafetensorsHeader } from '../io/safetensors.js';
import { expectShapes } from '../io/expect-shapes.js';
import { FileFormatError, TeamtrError } from '../util/errors.js';
import { shapeElementCount } from '../util/named-array.js';
import { RandomGenerator } from '../util/random.js';
import { tokenizerFromJSON } from '../tokenizer/load.js';
import { TransformerLM } from '../nn/transformer.js';
import { huggingFaceFormat } from './huggingface/format.js';
import type { LoadedModel, ModelFormat, ModelLoadOptions } from './model-format.js';
import { checkModelFits, parameterCount } from './memory-estimate.js';
import { assertFiniteParameters, assertForwardFinite } from './weight-checks.js';

/** A model ready to run: the network, its tokenizer and where it came from. */
export type { LoadedModel, ModelFormat, ModelLoadOptions } from './model-format.js';

/** teamtr's own checkpoint layout (config.json in our schema + tokenizer.json). */
export const teamtrCheckpointFormat: ModelFormat = {
  name: 'teamtr checkpoint',
  recognizes: (directory) =>
    existsSync(path.join(directory, checkpointFiles.model)) &&
    !existsSync(path.join(directory, 'tokenizer_config.json')),
  async load(directory) {
    await checkBeforeReading(directory);
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

/**
 * Everything a checkpoint's sizes could make impossible, refused before a tensor is read: the
 * model must fit this machine (config.json alone says how big it is), the weight file's header
 * must hold exactly that many parameters, and the tokenizer must be there.
 */
async function checkBeforeReading(directory: string): Promise<void> {
  const config = await loadCheckpointConfig(directory);
  checkModelFits(config, path.join(directory, checkpointFiles.config));
  const weightsPath = path.join(directory, checkpointFiles.model);
  const header = await readSafetensorsHeader(weightsPath);
  let held = 0;
  for (const entry of header.tensors.values()) held += shapeElementCount(entry.shape) ?? 0;
  if (held !== parameterCount(config))
    throw new FileFormatError(
      directory,
      `config.json describes a model of ${parameterCount(config)} parameters but ${checkpointFiles.model} holds ${held}; the two files do not belong together`,
    );
  if (!existsSync(path.join(directory, checkpointFiles.tokenizer)))
    throw new FileFormatError(
      directory,
      `no ${checkpointFiles.tokenizer}: a teamtr model checkpoint needs its tokenizer (save the model with its tokenizer, or copy tokenizer.json from the model it was trained from)`,
    );
}

export const modelFormats: ModelFormat[] = [huggingFaceFormat, teamtrCheckpointFormat];

/** Where the built-in tiny models ship: `<package>/models`. */
export function builtinModelsDirectory(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'models');
}

/**
 * Where `teamtr pretrain` puts models it builds for an installed package: a user cache
 * ($XDG_CACHE_HOME/teamtr/models, else ~/.cache/teamtr/models), never inside node_modules.
 */
export function userModelsDirectory(): string {
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(cache, 'teamtr', 'models');
}

/** Where pretrain writes by default: the package's models/ in a checkout, the cache otherwise. */
export function defaultPretrainDirectory(): string {
  const shipped = builtinModelsDirectory();
  return shipped.split(path.sep).includes('node_modules') ? userModelsDirectory() : shipped;
}

/**
 * `builtin:arithmetic-chain/role-0` → the shipped directory, else the one pretrain built in the
 * user cache; any other spec is a path.
 */
export function resolveModelSpec(spec: string): string {
  if (!spec.startsWith('builtin:')) return path.resolve(spec);
  const name = spec.slice('builtin:'.length);
  const shipped = path.join(builtinModelsDirectory(), name);
  const cached = path.join(userModelsDirectory(), name);
  return existsSync(shipped) || !existsSync(cached) ? shipped : cached;
}

/** Loads a model directory in any known format, with an error listing them when none fits. */
export async function loadModel(
  spec: string,
  options: ModelLoadOptions = {},
): Promise<LoadedModel> {
  const directory = resolveModelSpec(spec);
  if (!existsSync(directory)) throw new TeamtrError(modelNotFoundMessage(spec, directory));
  const format = modelFormats.find((candidate) => candidate.recognizes(directory));
  if (!format) {
    throw new FileFormatError(
      directory,
      `not a model directory of a known format (known: ${modelFormats.map((entry) => entry.name).join('; ')}); a teamtr checkpoint holds config.json, model.safetensors and tokenizer.json`,
    );
  }
  const loaded = await format.load(directory, options);
  assertUsableWeights(loaded, directory);
  return loaded;
}

/** A Hugging Face Hub id looks like `owner/name`: one slash, no leading dot or slash. */
const hubIdPattern = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/;

function modelNotFoundMessage(spec: string, directory: string): string {
  if (spec.startsWith('builtin:'))
    return `model "${spec}" not found at ${directory} (run \`teamtr pretrain\` to build the built-in models)`;
  if (hubIdPattern.test(spec))
    return `model "${spec}" not found at ${directory}: teamtr loads models from local folders only, it does not download from the Hugging Face Hub; download it first (e.g. \`huggingface-cli download ${spec} --local-dir models/${spec.split('/')[1]}\`) and give that folder`;
  return `model "${spec}" not found at ${directory}; give the path of a model folder`;
}

/** Refuses, naming the tensor, weights that are not finite or that overflow the forward pass. */
function assertUsableWeights(loaded: LoadedModel, directory: string): void {
  try {
    assertFiniteParameters(loaded.model, directory);
    assertForwardFinite(loaded.model, directory);
  } catch (error) {
    loaded.model.destroy();
    throw error;
  }
}
