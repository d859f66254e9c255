import path from 'node:path';
import { replaceDirectoryAtomic, writeJsonAtomic } from '../../io/atomic.js';
import type { TransformerLM } from '../../nn/transformer.js';
import { CharTokenizer } from '../../tokenizer/char.js';
import { HuggingFaceTokenizer } from '../../tokenizer/huggingface.js';
import type { Tokenizer } from '../../tokenizer/types.js';
import { TeamtrError } from '../../util/errors.js';
import { architectureConfigs, defaultModelTypeFor } from './config.js';
import type { GenerationDefaults } from './generation-config.js';
import { saveHuggingFaceWeights } from './weights.js';

/**
 * Writes a model as a Hugging Face directory that transformers, vLLM and teamtr itself load:
 * config.json, safetensors weights (LoRA adapters merged), tokenizer.json +
 * tokenizer_config.json and generation_config.json. The directory is replaced atomically.
 */

export interface ExportOptions {
  /** The original config.json: its model_type and the keys the engine ignores are kept. */
  huggingFaceConfig?: Record<string, unknown> | null;
  generation?: GenerationDefaults | null;
  /** @default 2 GiB */
  maxShardBytes?: number;
}

export async function exportHuggingFaceModel(
  model: TransformerLM,
  tokenizer: Tokenizer,
  directory: string,
  options: ExportOptions = {},
): Promise<void> {
  const base = options.huggingFaceConfig ?? undefined;
  const modelType =
    typeof base?.model_type === 'string' ? base.model_type : defaultModelTypeFor(model.config);
  const architecture = architectureConfigs.find((entry) => entry.modelType === modelType)!;
  const files = huggingFaceTokenizerFiles(tokenizer);
  const config = {
    ...architecture.fromModelConfig(model.config, base),
    ...(tokenizer.bosId !== undefined ? { bos_token_id: tokenizer.bosId } : {}),
    ...(tokenizer.eosId !== undefined ? { eos_token_id: tokenizer.eosId } : {}),
  };
  const stopIds = options.generation?.stopTokenIds.length
    ? options.generation.stopTokenIds
    : tokenizer.eosId !== undefined
      ? [tokenizer.eosId]
      : [];
  const generation: Record<string, unknown> = {
    eos_token_id: stopIds.length === 1 ? stopIds[0] : stopIds,
  };
  if (tokenizer.bosId !== undefined) generation.bos_token_id = tokenizer.bosId;
  if (tokenizer.padId !== undefined) generation.pad_token_id = tokenizer.padId;
  const defaults = options.generation;
  if (defaults?.temperature !== undefined)
    Object.assign(
      generation,
      defaults.temperature === 0
        ? { do_sample: false }
        : { do_sample: true, temperature: defaults.temperature },
    );
  if (defaults?.topK !== undefined) generation.top_k = defaults.topK;
  if (defaults?.topP !== undefined) generation.top_p = defaults.topP;
  await replaceDirectoryAtomic(directory, async (temporary) => {
    await writeJsonAtomic(path.join(temporary, 'config.json'), config);
    await saveHuggingFaceWeights(model, temporary, { maxShardBytes: options.maxShardBytes });
    await writeJsonAtomic(path.join(temporary, 'tokenizer.json'), files.tokenizer);
    await writeJsonAtomic(path.join(temporary, 'tokenizer_config.json'), files.config);
    await writeJsonAtomic(path.join(temporary, 'generation_config.json'), generation);
  });
}

/** tokenizer.json and tokenizer_config.json for a tokenizer the engine holds. */
export function huggingFaceTokenizerFiles(tokenizer: Tokenizer): {
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
} {
  if (tokenizer instanceof HuggingFaceTokenizer)
    return { tokenizer: tokenizer.tokenizerJson, config: tokenizer.config };
  if (tokenizer instanceof CharTokenizer) return charTokenizerFiles(tokenizer);
  throw new TeamtrError(
    `cannot write a ${tokenizer.constructor.name} as a Hugging Face tokenizer (supported: Hugging Face and teamtr character tokenizers)`,
  );
}

/**
 * The character tokenizer as a BPE model with no merges and no pre-tokenizer: every character
 * is its own token, unknown ones become <unk> one by one, and the Fuse decoder joins tokens
 * without spaces, exactly as CharTokenizer does. BOS is prepended by a TemplateProcessing
 * post-processor, as teamtr prepends it to every input.
 */
function charTokenizerFiles(tokenizer: CharTokenizer): {
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
} {
  const { specialTokens } = tokenizer;
  const vocabulary: Record<string, number> = {};
  for (let id = 0; id < tokenizer.vocabSize; id++) vocabulary[tokenizer.idToToken(id)!] = id;
  const roles = ['pad', 'bos', 'eos', 'unk'] as const;
  const addedTokens = roles.map((role) => ({
    id: tokenizer.tokenToId(specialTokens[role])!,
    content: specialTokens[role],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const bos = specialTokens.bos;
  return {
    tokenizer: {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: addedTokens,
      normalizer: null,
      pre_tokenizer: null,
      post_processor: bosTemplateProcessor(bos, tokenizer.bosId),
      decoder: { type: 'Fuse' },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: specialTokens.unk,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab: vocabulary,
        merges: [],
      },
    },
    config: {
      bos_token: bos,
      eos_token: specialTokens.eos,
      pad_token: specialTokens.pad,
      unk_token: specialTokens.unk,
      add_bos_token: true,
      clean_up_tokenization_spaces: false,
      tokenizer_class: 'PreTrainedTokenizerFast',
      model_max_length: 1_000_000,
    },
  };
}

/** A TemplateProcessing post-processor prepending the BOS token `bos` (id `bosId`) to inputs. */
function bosTemplateProcessor(bos: string, bosId: number): Record<string, unknown> {
  return {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [
      { SpecialToken: { id: bos, type_id: 0 } },
      { Sequence: { id: 'A', type_id: 0 } },
      { Sequence: { id: 'B', type_id: 1 } },
    ],
    special_tokens: { [bos]: { id: bos, ids: [bosId], tokens: [bos] } },
  };
}
