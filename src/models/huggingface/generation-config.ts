import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { readJsonFile } from '../../io/json-file.js';
import { parseWithSchema } from '../../util/schema.js';

/**
 * `generation_config.json`: the sampling defaults a model ships with. Only what teamtr's
 * sampler implements is read (temperature, top-k, top-p, greedy vs sampling, stop ids, length);
 * other keys (repetition penalty, beams) are ignored and listed in `ignored`.
 */
export interface GenerationDefaults {
  /** Ids that end generation (a chat model often has several, e.g. <|im_end|> and <|endoftext|>). */
  stopTokenIds: number[];
  temperature?: number;
  topK?: number;
  topP?: number;
  maxNewTokens?: number;
  /** Keys present that teamtr does not apply. */
  ignored: string[];
}

const tokenIds = z
  .union([z.number().int().nonnegative(), z.array(z.number().int().nonnegative())])
  .nullable()
  .optional();

const generationConfigSchema = z.looseObject({
  eos_token_id: tokenIds,
  do_sample: z.boolean().optional(),
  temperature: z.number().nonnegative().nullable().optional(),
  top_k: z.number().int().nonnegative().nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  max_new_tokens: z.number().int().positive().nullable().optional(),
});

const applied = new Set([
  'eos_token_id',
  'do_sample',
  'temperature',
  'top_k',
  'top_p',
  'max_new_tokens',
]);
const informational = new Set([
  'bos_token_id',
  'pad_token_id',
  'transformers_version',
  '_from_model_config',
  'max_length',
]);

export function parseGenerationConfig(raw: unknown, source: string): GenerationDefaults {
  const parsed = parseWithSchema(generationConfigSchema, raw, source);
  const eos = parsed.eos_token_id;
  const defaults: GenerationDefaults = {
    stopTokenIds: eos === null || eos === undefined ? [] : Array.isArray(eos) ? eos : [eos],
    ignored: Object.keys(parsed).filter((key) => !applied.has(key) && !informational.has(key)),
  };
  // do_sample false means greedy in transformers, whatever temperature says.
  if (parsed.do_sample === false) defaults.temperature = 0;
  else if (typeof parsed.temperature === 'number') defaults.temperature = parsed.temperature;
  if (typeof parsed.top_k === 'number') defaults.topK = parsed.top_k;
  if (typeof parsed.top_p === 'number') defaults.topP = parsed.top_p;
  if (typeof parsed.max_new_tokens === 'number') defaults.maxNewTokens = parsed.max_new_tokens;
  return defaults;
}

export async function loadGenerationConfig(directory: string): Promise<GenerationDefaults | null> {
  const file = path.join(directory, 'generation_config.json');
  if (!existsSync(file)) return null;
  return parseGenerationConfig(await readJsonFile(file), file);
}
