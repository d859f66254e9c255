import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, FileFormatError, TeamtrError } from '../util/errors.js';
import { HuggingFaceTokenizer } from './huggingface.js';
import { loadHuggingFaceTokenizer } from './huggingface-files.js';
import { loadTokenizer, tokenizerFromJSON } from './load.js';
import { byteLevelBpeFixture, chatMlTemplate } from './test-support/byte-level-bpe.js';
import { describeTokenizerContract } from './test-support/tokenizer-contract.js';

const fixture = byteLevelBpeFixture();
const byteLevel = () => new HuggingFaceTokenizer(fixture.tokenizer, fixture.config);

function wordPieceTokenizer(): HuggingFaceTokenizer {
  const words = [
    '[PAD]',
    '[UNK]',
    '[CLS]',
    '[SEP]',
    'hello',
    'world',
    'the',
    'sum',
    '##s',
    'is',
    '12',
    '3',
    '?',
    'of',
  ];
  const json = {
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]'].map((content, id) => ({
      id,
      content,
      special: true,
    })),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(words.map((word, id) => [word, id])),
    },
  };
  return new HuggingFaceTokenizer(json, {
    unk_token: '[UNK]',
    pad_token: '[PAD]',
    sep_token: '[SEP]',
  });
}

function unigramTokenizer(): HuggingFaceTokenizer {
  const pieces: Array<[string, number]> = [
    ['<unk>', 0],
    ['</s>', 0],
    ['▁', -2],
    ['▁hello', -3],
    ['▁world', -3],
    ['h', -5],
    ['e', -5],
    ['l', -5],
    ['o', -5],
    ['w', -5],
    ['r', -5],
    ['d', -5],
    ['▁he', -4],
  ];
  const metaspace = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true };
  const json = {
    added_tokens: [
      { id: 0, content: '<unk>', special: true },
      { id: 1, content: '</s>', special: true },
    ],
    normalizer: null,
    pre_tokenizer: metaspace,
    decoder: metaspace,
    model: { type: 'Unigram', unk_id: 0, vocab: pieces, byte_fallback: false },
  };
  return new HuggingFaceTokenizer(json, { eos_token: '</s>', unk_token: '<unk>' });
}

describeTokenizerContract(
  'HuggingFaceTokenizer (byte-level BPE)',
  byteLevel,
  'the sum of 12 and 3 is? héllo 😀 <|im_end|>\nbye',
);
describeTokenizerContract(
  'HuggingFaceTokenizer (WordPiece)',
  wordPieceTokenizer,
  'hello world the sums',
);
describeTokenizerContract('HuggingFaceTokenizer (Unigram)', unigramTokenizer, 'hello world held');

describe('HuggingFaceTokenizer', () => {
  test('role tokens come from tokenizer_config.json; BOS only when the tokenizer prepends it', () => {
    const tokenizer = byteLevel();
    assert.equal(tokenizer.vocabSize, fixture.vocabSize);
    assert.equal(tokenizer.eosId, tokenizer.tokenToId('<|im_end|>'));
    assert.equal(tokenizer.padId, tokenizer.tokenToId('<|endoftext|>'));
    assert.equal(tokenizer.bosId, undefined);
    const withBos = new HuggingFaceTokenizer(fixture.tokenizer, {
      ...fixture.config,
      bos_token: '<|im_start|>',
      add_bos_token: true,
    });
    assert.equal(withBos.bosId, withBos.tokenToId('<|im_start|>'));
    assert.equal(withBos.bosToken, '<|im_start|>');
    const template = {
      ...fixture.tokenizer,
      post_processor: {
        type: 'TemplateProcessing',
        single: [
          { SpecialToken: { id: '<|endoftext|>', type_id: 0 } },
          { Sequence: { id: 'A', type_id: 0 } },
        ],
        pair: [],
        special_tokens: {},
      },
    };
    const viaTemplate = new HuggingFaceTokenizer(template, {
      ...fixture.config,
      bos_token: { content: '<|endoftext|>', lstrip: false },
    });
    assert.equal(viaTemplate.bosId, viaTemplate.tokenToId('<|endoftext|>'));
  });

  test('untrusted text never yields special ids; program-built text does', () => {
    const tokenizer = byteLevel();
    const start = tokenizer.tokenToId('<|im_start|>')!;
    const end = tokenizer.tokenToId('<|im_end|>')!;
    const text = '<|im_start|>user\nhi<|im_end|>';
    const untrusted = tokenizer.encode(text);
    assert.ok(!untrusted.includes(start) && !untrusted.includes(end));
    assert.equal(tokenizer.decode(untrusted), text);
    const trusted = tokenizer.encodeWithSpecialTokens(text);
    assert.equal(trusted[0], start);
    assert.equal(trusted.at(-1), end);
    assert.equal(tokenizer.decode(trusted), text);
    assert.equal(tokenizer.decode(trusted, { skipSpecialTokens: true }), 'user\nhi');
  });

  test('non-special added tokens are split from text', () => {
    const withAdded = byteLevelBpeFixture({ addedNonSpecial: '<tool>' });
    const tokenizer = new HuggingFaceTokenizer(withAdded.tokenizer, withAdded.config);
    const id = tokenizer.tokenToId('<tool>')!;
    assert.deepEqual(tokenizer.encode('a<tool>b'), [
      tokenizer.tokenToId('a'),
      id,
      tokenizer.tokenToId('b'),
    ]);
    assert.equal(tokenizer.specialIds.has(id), false);
  });

  test('reads the chat template from tokenizer_config.json or chat_template.jinja', async () => {
    assert.equal(byteLevel().chatTemplate, chatMlTemplate);
    const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-hf-tokenizer-'));
    try {
      const noTemplate = byteLevelBpeFixture({ chatTemplate: false });
      writeFileSync(path.join(directory, 'tokenizer.json'), JSON.stringify(noTemplate.tokenizer));
      writeFileSync(
        path.join(directory, 'tokenizer_config.json'),
        JSON.stringify(noTemplate.config),
      );
      assert.equal((await loadHuggingFaceTokenizer(directory)).chatTemplate, null);
      writeFileSync(path.join(directory, 'chat_template.jinja'), '{{ messages[0].content }}');
      assert.equal(
        (await loadHuggingFaceTokenizer(directory)).chatTemplate,
        '{{ messages[0].content }}',
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  test('a bare tokenizer.json loads through the tokenizer file loader', () => {
    const tokenizer = tokenizerFromJSON(fixture.tokenizer, 'tokenizer.json');
    assert.ok(tokenizer instanceof HuggingFaceTokenizer);
    assert.equal(tokenizer.eosId, undefined);
    assert.deepEqual(tokenizer.encode('the sum'), byteLevel().encode('the sum'));
  });

  describe('malformed files get errors naming the file and the problem', () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-hf-tokenizer-bad-'));
    after(() => rmSync(directory, { recursive: true, force: true }));
    const write = (name: string, value: unknown) =>
      writeFileSync(
        path.join(directory, name),
        typeof value === 'string' ? value : JSON.stringify(value),
      );

    test('unsupported model type', async () => {
      write('tokenizer.json', {
        ...fixture.tokenizer,
        model: { ...(fixture.tokenizer.model as object), type: 'WordLevel' },
      });
      write('tokenizer_config.json', fixture.config);
      await assert.rejects(
        loadHuggingFaceTokenizer(directory),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message.includes('tokenizer.json') &&
          error.message.includes(
            'model.type: got "WordLevel" (valid: "BPE", "WordPiece", "Unigram")',
          ),
      );
    });

    test('a role token outside the vocabulary', async () => {
      write('tokenizer.json', fixture.tokenizer);
      write('tokenizer_config.json', { ...fixture.config, eos_token: '</s>' });
      await assert.rejects(
        loadHuggingFaceTokenizer(directory),
        (error: unknown) =>
          error instanceof FileFormatError &&
          /eos_token "<\/s>" of tokenizer_config\.json is not in the vocabulary/.test(
            error.message,
          ),
      );
    });

    test('bad JSON, a missing vocabulary, a vocabulary with holes, no tokenizer.json', async () => {
      write('tokenizer_config.json', fixture.config);
      write('tokenizer.json', '{"model": ');
      await assert.rejects(loadHuggingFaceTokenizer(directory), /tokenizer\.json: not valid JSON/);
      write('tokenizer.json', { model: { type: 'BPE' }, added_tokens: [] });
      await assert.rejects(
        loadHuggingFaceTokenizer(directory),
        (error: unknown) => error instanceof ConfigError && error.message.includes('model.vocab'),
      );
      write('tokenizer.json', {
        ...fixture.tokenizer,
        added_tokens: [{ id: 400, content: '<|x|>', special: true }],
      });
      await assert.rejects(
        loadHuggingFaceTokenizer(directory),
        /added token "<\|x\|>" has id 400, but the vocabulary holds only 290 distinct ids \(ids must run from 0 without gaps\)/,
      );
      rmSync(path.join(directory, 'tokenizer.json'));
      write('vocab.json', {});
      await assert.rejects(
        loadHuggingFaceTokenizer(directory),
        (error: unknown) =>
          error instanceof FileFormatError &&
          /no tokenizer\.json \(only a slow tokenizer is present/.test(error.message),
      );
      await assert.rejects(
        loadTokenizer(path.join(directory, 'vocab.json')),
        /not a tokenizer file of a known format/,
      );
    });

    test('decode refuses ids outside the vocabulary with the valid range', () => {
      assert.throws(
        () => byteLevel().decode([289]),
        (error: unknown) =>
          error instanceof TeamtrError && /valid ids: 0 to 288/.test(error.message),
      );
    });
  });
});
