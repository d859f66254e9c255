/**
 * A small byte-level BPE tokenizer in the Hugging Face tokenizer.json layout, written for the
 * tests (Qwen-style: ByteLevel pre-tokenizer and decoder, <|endoftext|>, <|im_start|> and
 * <|im_end|> as special added tokens, a ChatML chat template). Ids: the 256 byte symbols
 * (id = byte value), then one id per merge, then the three specials.
 */

/** GPT-2's reversible byte → printable character map. */
export function byteToUnicode(): string[] {
  const printable = (byte: number) =>
    (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
  const symbols: string[] = new Array(256);
  let shifted = 0;
  for (let byte = 0; byte < 256; byte++) {
    symbols[byte] = printable(byte)
      ? String.fromCharCode(byte)
      : String.fromCharCode(256 + shifted++);
  }
  return symbols;
}

/** Merges in priority order; each result is a token of the vocabulary. */
export const fixtureMerges: Array<[string, string]> = [
  ['Ġ', 't'],
  ['h', 'e'],
  ['Ġt', 'he'],
  ['i', 'n'],
  ['Ġ', 'a'],
  ['e', 'r'],
  ['o', 'n'],
  ['Ġ', 's'],
  ['r', 'e'],
  ['a', 't'],
  ['e', 'n'],
  ['Ġ', 'w'],
  ['o', 'r'],
  ['Ġ', 'c'],
  ['Ġ', 'o'],
  ['i', 's'],
  ['Ġ', 'i'],
  ['Ġs', 'um'],
  ['u', 'm'],
  ['Ġ', 'b'],
  ['a', 'n'],
  ['Ġa', 'n'],
  ['Ġan', 'd'],
  ['Ġ', '='],
  ['Ġ', '+'],
  ['1', '2'],
  ['Ġ', '1'],
  ['Ġ', '2'],
  ['Ġ', '3'],
  ['?', 'Ċ'],
];

export const fixtureSpecialTokens = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

export const chatMlTemplate =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** The vocabulary: bytes, then merge results (a merge whose parts are missing is skipped). */
function buildVocabulary(): Map<string, number> {
  const vocabulary = new Map<string, number>();
  byteToUnicode().forEach((symbol, byte) => vocabulary.set(symbol, byte));
  // Merges may reference later merges' results (['Ġs', 'um'] before ['u', 'm']): add all results.
  for (const [left, right] of fixtureMerges) {
    if (!vocabulary.has(left + right)) vocabulary.set(left + right, vocabulary.size);
  }
  return vocabulary;
}

export interface ByteLevelFixture {
  tokenizer: Record<string, unknown>;
  config: Record<string, unknown>;
  vocabSize: number;
}

export function byteLevelBpeFixture(
  options: { chatTemplate?: boolean; addedNonSpecial?: string } = {},
): ByteLevelFixture {
  const vocabulary = buildVocabulary();
  const added: Array<Record<string, unknown>> = fixtureSpecialTokens.map((content, index) => ({
    id: vocabulary.size + index,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  if (options.addedNonSpecial) {
    added.push({
      id: vocabulary.size + added.length,
      content: options.addedNonSpecial,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: true,
      special: false,
    });
  }
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'ByteLevel',
      add_prefix_space: false,
      trim_offsets: true,
      use_regex: true,
    },
    post_processor: {
      type: 'ByteLevel',
      add_prefix_space: false,
      trim_offsets: false,
      use_regex: true,
    },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
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
      merges: fixtureMerges.map(([left, right]) => [left, right]),
    },
  };
  const config: Record<string, unknown> = {
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(
      added.map((token) => [String(token.id), { ...token, id: undefined }]),
    ),
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    clean_up_tokenization_spaces: false,
    model_max_length: 4096,
    tokenizer_class: 'Qwen2Tokenizer',
    errors: 'replace',
  };
  if (options.chatTemplate ?? true) config.chat_template = chatMlTemplate;
  return {
    tokenizer,
    config: JSON.parse(JSON.stringify(config)) as Record<string, unknown>,
    vocabSize: vocabulary.size + added.length,
  };
}
