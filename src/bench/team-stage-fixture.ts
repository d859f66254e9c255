import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportHuggingFaceModel } from '../models/huggingface/export.js';
import type { ModelConfigInput } from '../nn/config.js';
import { TransformerLM } from '../nn/transformer.js';
import { HuggingFaceTokenizer } from '../tokenizer/huggingface.js';
import { RandomGenerator } from '../util/random.js';
import { realModelShapes, smolLM2Shape } from './real-model.js';

/**
 * A Hugging Face model directory with SmolLM2-135M's shape and random weights, and a byte-level
 * BPE tokenizer with its vocabulary size (49,152 ids), so a team built on it costs what one
 * built on the real checkpoint costs: the same matrices, the same vocabulary-wide logits and
 * distributions, the same tokenizer tables.
 */

const specialTokens = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

const chatMlTemplate =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** GPT-2's reversible byte → printable character map (the ByteLevel pre-tokenizer's alphabet). */
function byteSymbols(): string[] {
  const printable = (byte: number) =>
    (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
  const symbols: string[] = new Array(256);
  let shifted = 0;
  for (let byte = 0; byte < 256; byte++)
    symbols[byte] = printable(byte)
      ? String.fromCharCode(byte)
      : String.fromCharCode(256 + shifted++);
  return symbols;
}

/**
 * The merges of the fixture's BPE, best first: lowercase words after a space, grown a letter at
 * a time (" a", " ab", " abc", …, until the vocabulary is full: at 49,152 ids, every word of up to
 * three letters and 30,615 of four), as
 * a real English vocabulary's tokens are mostly a space and a word. A random model's turn is
 * then a run of such words, which the pre-tokenizer splits at the spaces and BPE encodes back
 * word by word: about as many tokens as were sampled, as a real model's turn does. (Merges of
 * arbitrary byte pairs made most sampled tokens invalid UTF-8: each decoded to replacement
 * characters that re-encoded to two or three tokens, so every turn grew about 2.7-fold in the
 * next agent's context and a stage processed about twice the positions of a real team with the
 * same turn lengths.)
 */
function spacedWordMerges(symbols: readonly string[], count: number): Array<[string, string]> {
  const letters = Array.from({ length: 26 }, (_unused, index) => String.fromCharCode(97 + index));
  const merges: Array<[string, string]> = [];
  let words = [symbols[32]!];
  while (merges.length < count) {
    const grown: string[] = [];
    for (const word of words)
      for (const letter of letters) {
        if (merges.length === count) return merges;
        merges.push([word, letter]);
        grown.push(word + letter);
      }
    words = grown;
  }
  return merges;
}

/**
 * tokenizer.json and tokenizer_config.json of a byte-level BPE with `vocabSize` ids: the 256
 * byte symbols, then the merges of spaced words (spacedWordMerges) up to the size less the three ChatML
 * specials, which take the last ids.
 */
export function byteLevelTokenizerFiles(vocabSize: number): {
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
} {
  const symbols = byteSymbols();
  const vocabulary = new Map<string, number>(symbols.map((symbol, byte) => [symbol, byte]));
  const mergeCount = vocabSize - 256 - specialTokens.length;
  const merges = spacedWordMerges(symbols, Math.max(0, mergeCount));
  for (const [left, right] of merges) vocabulary.set(left + right, vocabulary.size);
  const added = specialTokens.map((content, index) => ({
    id: vocabulary.size + index,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const byteLevel = { add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', ...byteLevel },
    post_processor: { type: 'ByteLevel', ...byteLevel, trim_offsets: false },
    decoder: { type: 'ByteLevel', ...byteLevel },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocabulary),
      merges,
    },
  };
  const config = {
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...token }) => [String(id), token])),
    bos_token: '<|im_start|>',
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    clean_up_tokenization_spaces: false,
    model_max_length: 8192,
    tokenizer_class: 'GPT2Tokenizer',
    chat_template: chatMlTemplate,
  };
  return { tokenizer, config };
}

/**
 * Writes a random-weight model of `config` (weights drawn by the engine's own initialization
 * from `seed`) with a tokenizer of its vocabulary to `directory`, in shards of at most 128 MB so
 * writing holds one shard beside the model.
 */
export async function writeShapeCheckpoint(
  directory: string,
  config: ModelConfigInput,
  seed: string,
): Promise<void> {
  const model = new TransformerLM(config, new RandomGenerator(seed));
  try {
    const files = byteLevelTokenizerFiles(config.vocabSize);
    const tokenizer = new HuggingFaceTokenizer(files.tokenizer, files.config);
    await exportHuggingFaceModel(model, tokenizer, directory, { maxShardBytes: 128 * 1024 ** 2 });
  } finally {
    model.destroy();
  }
}

/** The SmolLM2-135M-shape checkpoint (writeShapeCheckpoint). */
export async function writeSmolLM2ShapeCheckpoint(directory: string, seed: string): Promise<void> {
  await writeShapeCheckpoint(directory, smolLM2Shape, seed);
}

/**
 * writeShapeCheckpoint in a process of its own, so that building the random model in float32
 * (6.2 GB at Qwen2.5-1.5B's shape) does not count in the peak resident set of the process that
 * then loads the checkpoint and measures a stage.
 */
export function writeShapeCheckpointInChild(directory: string, shape: string, seed: string): void {
  const here = fileURLToPath(import.meta.url);
  const fromSources = here.endsWith('.ts');
  const run = spawnSync(
    process.execPath,
    [...(fromSources ? ['--import', 'tsx'] : []), here, directory, shape, seed],
    { encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'] },
  );
  if (run.status !== 0)
    throw new Error(`writing the ${shape} checkpoint failed (exit ${run.status}):\n${run.stderr}`);
}

// `node team-stage-fixture.js <directory> <shape name> <seed>`: the child of the function above.
const entry = process.argv[1] ? path.resolve(process.argv[1]) : '';
if (entry === fileURLToPath(import.meta.url)) {
  const [directory, name, seed] = process.argv.slice(2);
  const shape = realModelShapes[name ?? ''];
  if (!directory || !shape || !seed) {
    process.stderr.write(
      `usage: team-stage-fixture.js <directory> <${Object.keys(realModelShapes).join('|')}> <seed>\n`,
    );
    process.exit(2);
  }
  await writeShapeCheckpoint(directory, shape.config, seed);
}
