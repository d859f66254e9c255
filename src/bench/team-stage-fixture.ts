import { exportHuggingFaceModel } from '../models/huggingface/export.js';
import { TransformerLM } from '../nn/transformer.js';
import { HuggingFaceTokenizer } from '../tokenizer/huggingface.js';
import { RandomGenerator } from '../util/random.js';
import { smolLM2Shape } from './real-model.js';

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
 * tokenizer.json and tokenizer_config.json of a byte-level BPE with `vocabSize` ids: the 256
 * byte symbols, then two-byte merges (printable ASCII pairs first, as real merges favour them)
 * up to the size less the three ChatML specials, which take the last ids.
 */
export function byteLevelTokenizerFiles(vocabSize: number): {
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
} {
  const symbols = byteSymbols();
  const ascii = Array.from({ length: 95 }, (_unused, index) => 32 + index);
  const rest = Array.from({ length: 256 }, (_unused, byte) => byte).filter(
    (byte) => byte < 32 || byte > 126,
  );
  const order = [...ascii, ...rest].map((byte) => symbols[byte]!);
  const vocabulary = new Map<string, number>(symbols.map((symbol, byte) => [symbol, byte]));
  const merges: Array<[string, string]> = [];
  const mergeCount = vocabSize - 256 - specialTokens.length;
  outer: for (const left of order) {
    for (const right of order) {
      if (merges.length === mergeCount) break outer;
      merges.push([left, right]);
      vocabulary.set(left + right, vocabulary.size);
    }
  }
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
 * Writes the random-weight SmolLM2-shape model (weights drawn by the engine's own
 * initialization from `seed`) with the tokenizer to `directory`, in shards of at most 128 MB so
 * writing holds one shard beside the model.
 */
export async function writeSmolLM2ShapeCheckpoint(directory: string, seed: string): Promise<void> {
  const model = new TransformerLM(smolLM2Shape, new RandomGenerator(seed));
  try {
    const files = byteLevelTokenizerFiles(smolLM2Shape.vocabSize);
    const tokenizer = new HuggingFaceTokenizer(files.tokenizer, files.config);
    await exportHuggingFaceModel(model, tokenizer, directory, { maxShardBytes: 128 * 1024 ** 2 });
  } finally {
    model.destroy();
  }
}
