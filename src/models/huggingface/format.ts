import { existsSync } from 'node:fs';
import path from 'node:path';
import { readJsonObjectFile } from '../../io/json-file.js';
import { TransformerLM } from '../../nn/transformer.js';
import { loadHuggingFaceTokenizer } from '../../tokenizer/huggingface-files.js';
import { readBoundedTextSync } from '../../util/bounded-file.js';
import { FileFormatError } from '../../util/errors.js';
import { warnNoChatTemplate } from '../chat.js';
import { RandomGenerator } from '../../util/random.js';
import type { LoadedModel, ModelFormat, ModelLoadOptions } from '../model-format.js';
import { architectureOf } from './config.js';
import { checkModelFits } from '../memory-estimate.js';
import { loadGenerationConfig } from './generation-config.js';
import { loadHuggingFaceWeights } from './weights.js';

/**
 * A Hugging Face model directory (what `save_pretrained` writes or the Hub serves):
 * config.json with a `model_type`, safetensors weights (single or sharded), tokenizer.json
 * with tokenizer_config.json, and optionally generation_config.json.
 */

/**
 * config.json's model_type, or undefined when there is no config.json or it is not JSON (another
 * format may claim the directory, and its loader names the problem). A config.json that is a
 * device, a pipe or too large is an error here: it is never read.
 */
function readModelType(directory: string): unknown {
  const configPath = path.join(directory, 'config.json');
  if (!existsSync(configPath)) return undefined;
  const text = readBoundedTextSync(configPath, { limit: 'jsonBytes', what: 'config.json' });
  try {
    const raw = JSON.parse(text) as unknown;
    return raw !== null && typeof raw === 'object'
      ? (raw as { model_type?: unknown }).model_type
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Loading overwrites every parameter (the loader checks that each one is covered), so drawing
 * random initial values first would only cost time: seconds for a 135M-parameter model. The
 * zeros it yields are never written (linear.ts `normalValues`), so a matrix loaded straight into
 * bfloat16 never touches the pages of its float32 array.
 */
class SkippedInitialization extends RandomGenerator {
  override normal(): number {
    return 0;
  }
}

export async function loadHuggingFaceModel(
  directory: string,
  options: ModelLoadOptions = {},
): Promise<LoadedModel> {
  const configPath = path.join(directory, 'config.json');
  const raw = await readJsonObjectFile(configPath);
  const architecture = architectureOf(raw, configPath);
  const config = architecture.toModelConfig(raw, configPath);
  const tokenizer = await loadHuggingFaceTokenizer(directory);
  if (tokenizer.chatTemplate === null) warnNoChatTemplate(directory);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new FileFormatError(
      directory,
      `the tokenizer has ${tokenizer.vocabSize} tokens but the model only ${config.vocabSize} embedding rows (vocab_size)`,
    );
  }
  checkModelFits(config, configPath);
  const model = new TransformerLM(config, new SkippedInitialization(0));
  try {
    await loadHuggingFaceWeights(model, directory, options.frozenMatrices);
  } catch (error) {
    model.destroy();
    throw error;
  }
  return {
    model,
    tokenizer,
    source: directory,
    optimizerState: null,
    extra: null,
    generation: await loadGenerationConfig(directory),
    huggingFaceConfig: raw,
  };
}

export const huggingFaceFormat: ModelFormat = {
  name: 'Hugging Face model directory (config.json with model_type, safetensors, tokenizer.json)',
  recognizes: (directory) => typeof readModelType(directory) === 'string',
  load: loadHuggingFaceModel,
};
