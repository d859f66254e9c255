import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runBounded } from '../util/test-support/bounded-child.js';
import { HuggingFaceTokenizer } from './huggingface.js';
import { byteLevelBpeFixture } from './test-support/byte-level-bpe.js';

const tokenizerModule = JSON.stringify(new URL('./huggingface.ts', import.meta.url).href);

/** Builds a tokenizer from `json` in a bounded child and encodes `text`; prints the outcome. */
async function buildBounded(json: unknown, text: string, env: Record<string, string> = {}) {
  const result = await runBounded({
    setup: `const { HuggingFaceTokenizer } = await import(${tokenizerModule});`,
    body: `try { const t = new HuggingFaceTokenizer(${JSON.stringify(json)}, {}); console.log('encoded', t.encode(${JSON.stringify(text)}).length); } catch (error) { console.log(error.name + ': ' + error.message); }`,
    env,
  });
  assert.equal(result.exceeded, null, `killed for ${result.exceeded}`);
  assert.ok(result.peakRssBytes < 2 ** 30, `peak RSS ${result.peakRssBytes}`);
  return result.stdout.trim();
}

function withSplit(regex: string): Record<string, unknown> {
  const { tokenizer } = byteLevelBpeFixture();
  return {
    ...tokenizer,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
  };
}

describe('hostile tokenizer files', () => {
  test('an added token with id 1e9 is refused at once, naming it', async () => {
    const { tokenizer } = byteLevelBpeFixture();
    const json = {
      ...tokenizer,
      added_tokens: [
        ...(tokenizer.added_tokens as unknown[]),
        { id: 1e9, content: '<far>', special: true },
      ],
    };
    assert.match(
      await buildBounded(json, 'hi'),
      /FileFormatError: tokenizer\.json: added token "<far>" has id 1000000000, but the vocabulary holds only \d+ distinct ids/,
    );
  });

  test('a split regex that backtracks catastrophically is refused at load, naming it', async () => {
    const outcome = await buildBounded(withSplit('(a|a)+$'), 'a'.repeat(40) + 'b', {
      TEAMTR_REGEX_PROBE_MS: '1000',
    });
    assert.match(
      outcome,
      /FileFormatError: tokenizer\.json: pre_tokenizer\.pretokenizers\[0\]: the regular expression "\(a\|a\)\+\$" backtracks catastrophically: .* within 1 s \(TEAMTR_REGEX_PROBE_MS raises it\)/,
    );
  });

  test("a real model's split regex passes the probe and encodes as before", () => {
    const qwen =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    const split = new HuggingFaceTokenizer(withSplit(qwen), {});
    const plain = new HuggingFaceTokenizer(byteLevelBpeFixture().tokenizer, {});
    const text = 'the sum of 12 and 3 is 15\n  ok';
    assert.equal(split.decode(split.encode(text)), text);
    assert.equal(plain.decode(plain.encode(text)), text);
  });

  test('a vocabulary of 200,000 tokens loads (spreading its ids into Math.max overflowed)', () => {
    const vocab: Record<string, number> = { '[UNK]': 0 };
    for (let id = 1; id < 200_000; id++) vocab[`t${id}`] = id;
    const json = {
      added_tokens: [],
      normalizer: null,
      pre_tokenizer: { type: 'Whitespace' },
      decoder: null,
      model: { type: 'WordPiece', vocab, unk_token: '[UNK]', continuing_subword_prefix: '##' },
    };
    const tokenizer = new HuggingFaceTokenizer(json, { unk_token: '[UNK]' });
    assert.equal(tokenizer.vocabSize, 200_000);
    assert.deepEqual(tokenizer.encode('t199999 t7'), [199_999, 7]);
  });

  test('a Unigram model with an object vocabulary says it is not supported', () => {
    const json = {
      added_tokens: [],
      normalizer: null,
      pre_tokenizer: null,
      decoder: null,
      model: { type: 'Unigram', unk_id: 0, vocab: { '<unk>': 0, a: 1 } },
    };
    assert.throws(
      () => new HuggingFaceTokenizer(json, {}),
      /this Unigram tokenizer is not supported: its model\.vocab is an object of ids, where a Unigram model lists \[piece, score\] pairs/,
    );
    const noUnknown = {
      ...json,
      model: {
        type: 'Unigram',
        vocab: [
          ['a', -1],
          ['b', -1],
        ],
      },
    };
    const tokenizer = new HuggingFaceTokenizer(noUnknown, {});
    assert.deepEqual(tokenizer.encode('ab'), [0, 1]);
    assert.throws(
      () => tokenizer.encode('abz'),
      /tokenizer: encoding "abz" gave id undefined, which is not in the vocabulary \(0 to 1\); .* no unknown token/,
    );
    assert.throws(
      () =>
        new HuggingFaceTokenizer({ ...noUnknown, model: { ...noUnknown.model, unk_id: 7 } }, {}),
      /model\.unk_id 7 is not the id of one of its 2 pieces/,
    );
  });
});
