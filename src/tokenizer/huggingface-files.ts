import { existsSync } from 'node:fs';
import path from 'node:path';
import { readJsonFile } from '../io/json-file.js';
import { readBoundedText, type FileSizeLimit } from '../util/bounded-file.js';
import { FileFormatError } from '../util/errors.js';
import { HuggingFaceTokenizer } from './huggingface.js';

/** The files of a Hugging Face tokenizer inside a model directory. */
export const huggingFaceTokenizerFiles = {
  tokenizer: 'tokenizer.json',
  config: 'tokenizer_config.json',
  specialTokensMap: 'special_tokens_map.json',
  chatTemplate: 'chat_template.jinja',
} as const;

/**
 * Loads the tokenizer of a Hugging Face model directory: tokenizer.json (required),
 * tokenizer_config.json, special_tokens_map.json (older repos keep role tokens there) and
 * chat_template.jinja (newer repos keep the template there).
 */
export async function loadHuggingFaceTokenizer(directory: string): Promise<HuggingFaceTokenizer> {
  const file = (name: string) => path.join(directory, name);
  if (!existsSync(file(huggingFaceTokenizerFiles.tokenizer))) {
    const slow = existsSync(file('vocab.json')) || existsSync(file('tokenizer.model'));
    const hint = slow
      ? ' (only a slow tokenizer is present; save it once with transformers `AutoTokenizer.from_pretrained(...).save_pretrained(...)` to get tokenizer.json)'
      : '';
    throw new FileFormatError(directory, `no ${huggingFaceTokenizerFiles.tokenizer}${hint}`);
  }
  const tokenizerJson = await readObject(
    file(huggingFaceTokenizerFiles.tokenizer),
    'tokenizerBytes',
  );
  const config = existsSync(file(huggingFaceTokenizerFiles.config))
    ? await readObject(file(huggingFaceTokenizerFiles.config))
    : {};
  if (existsSync(file(huggingFaceTokenizerFiles.specialTokensMap))) {
    const specials = await readObject(file(huggingFaceTokenizerFiles.specialTokensMap));
    for (const [key, value] of Object.entries(specials))
      if (config[key] === undefined) config[key] = value;
  }
  if (
    config.chat_template === undefined &&
    existsSync(file(huggingFaceTokenizerFiles.chatTemplate))
  ) {
    config.chat_template = await readBoundedText(file(huggingFaceTokenizerFiles.chatTemplate), {
      limit: 'chatTemplateBytes',
      what: 'a chat template',
    });
  }
  return new HuggingFaceTokenizer(tokenizerJson, config, file(huggingFaceTokenizerFiles.tokenizer));
}

async function readObject(
  filePath: string,
  limit: FileSizeLimit = 'jsonBytes',
): Promise<Record<string, unknown>> {
  const value = await readJsonFile(filePath, limit);
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new FileFormatError(filePath, 'expected a JSON object');
  return value as Record<string, unknown>;
}
