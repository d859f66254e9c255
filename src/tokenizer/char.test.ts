import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, FileFormatError, TeamtrError } from '../util/errors.js';
import { CharTokenizer, defaultCharAlphabet } from './char.js';
import { loadTokenizer, saveTokenizer } from './load.js';
import { describeTokenizerContract } from './test-support/tokenizer-contract.js';

describeTokenizerContract(
  'CharTokenizer (default alphabet)',
  () => new CharTokenizer(),
  'Q: 2+3?\nA: {5} ~ok~',
);
describeTokenizerContract(
  'CharTokenizer (custom alphabet, non-BMP)',
  () =>
    new CharTokenizer({
      alphabet: 'abc😀é ',
      specialTokens: { pad: '[P]', bos: '[B]', eos: '[E]', unk: '[U]' },
    }),
  'a😀 béc',
);

describe('CharTokenizer', () => {
  test('default alphabet: newline and printable ASCII, ids after the four specials', () => {
    assert.equal(defaultCharAlphabet.length, 96);
    assert.equal(defaultCharAlphabet[0], '\n');
    assert.equal(defaultCharAlphabet[1], ' ');
    assert.equal(defaultCharAlphabet.at(-1), '~');
    const tokenizer = new CharTokenizer();
    assert.equal(tokenizer.vocabSize, 100);
    assert.deepEqual(
      [tokenizer.padId, tokenizer.bosId, tokenizer.eosId, tokenizer.unkId],
      [0, 1, 2, 3],
    );
    assert.deepEqual(tokenizer.encode('\n A'), [4, 5, 4 + 1 + (0x41 - 0x20)]);
    assert.equal(tokenizer.tokenToId('<eos>'), 2);
    assert.equal(tokenizer.idToToken(1), '<bos>');
  });

  test('unknown characters become <unk>, one per code point', () => {
    const tokenizer = new CharTokenizer({ alphabet: 'ab' });
    assert.deepEqual(tokenizer.encode('aé😀b'), [4, 3, 3, 5]);
    assert.equal(tokenizer.decode(tokenizer.encode('aéb')), 'a<unk>b');
  });

  test('strict mode names the unknown character, its code point and position', () => {
    const tokenizer = new CharTokenizer({ alphabet: 'ab😀', strict: true });
    // Positions count code points: é is the 5th character (UTF-16 index 5).
    assert.throws(
      () => tokenizer.encode('ab😀aé'),
      (error: unknown) =>
        error instanceof TeamtrError &&
        error.message.includes('"é" (U+00E9) at character 4 is not in the alphabet'),
    );
    assert.throws(() => tokenizer.encode('a\tb'), /"\\t" \(U\+0009\) at character 1/);
  });

  test('refuses duplicate characters and an empty alphabet', () => {
    assert.throws(
      () => new CharTokenizer({ alphabet: 'abca' }),
      /"a" appears twice \(ids 4 and 7\)/,
    );
    assert.throws(
      () =>
        new CharTokenizer({
          alphabet: 'ab',
          specialTokens: { pad: 'a', bos: '<b>', eos: '<e>', unk: '<u>' },
        }),
      /"a" appears twice/,
    );
    assert.throws(() => new CharTokenizer({ alphabet: '' }), /alphabet is empty/);
  });

  test('decode can skip specials; pad/bos/eos render as their strings otherwise', () => {
    const tokenizer = new CharTokenizer({ alphabet: 'hi' });
    const ids = [1, ...tokenizer.encode('hi'), 2, 0];
    assert.equal(tokenizer.decode(ids), '<bos>hi<eos><pad>');
    assert.equal(tokenizer.decode(ids, { skipSpecialTokens: true }), 'hi');
    assert.throws(() => tokenizer.decode([1.5]), /cannot decode id 1.5 \(valid ids: 0 to 5\)/);
  });

  describe('tokenizer.json', () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-tokenizer-'));
    after(() => rmSync(directory, { recursive: true, force: true }));

    test('saves and loads a small JSON file', async () => {
      const file = path.join(directory, 'tokenizer.json');
      const tokenizer = new CharTokenizer({ alphabet: 'xyz\n', strict: true });
      await saveTokenizer(file, tokenizer);
      assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), {
        type: 'teamtr-char',
        version: 1,
        alphabet: 'xyz\n',
        specialTokens: { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' },
        strict: true,
      });
      const loaded = await loadTokenizer(file);
      assert.ok(loaded instanceof CharTokenizer);
      assert.equal(loaded.strict, true);
      assert.deepEqual(loaded.encode('zyx\n'), tokenizer.encode('zyx\n'));
    });

    test('a bad file gets a clear error naming the file and the problem', async () => {
      const file = path.join(directory, 'bad.json');
      writeFileSync(
        file,
        JSON.stringify({
          type: 'teamtr-char',
          version: 1,
          alphabet: 'ab',
          specialTokens: { pad: '<p>', bos: '<b>', eos: '<e>' },
        }),
      );
      await assert.rejects(loadTokenizer(file), (error: unknown) => {
        return (
          error instanceof ConfigError &&
          error.message.includes('bad.json') &&
          error.message.includes('unk')
        );
      });
      writeFileSync(
        file,
        JSON.stringify({
          type: 'teamtr-char',
          version: 1,
          alphabet: 'ab',
          specialTokens: { pad: '<p>', bos: '<b>', eos: '<e>', unk: '<u>' },
          lowercase: true,
        }),
      );
      await assert.rejects(
        loadTokenizer(file),
        /unknown key "lowercase" \(valid keys: type, version, alphabet, specialTokens, strict\)/,
      );
      writeFileSync(file, JSON.stringify({ model: { type: 'BPE' } }));
      await assert.rejects(loadTokenizer(file), (error: unknown) => {
        return (
          error instanceof FileFormatError &&
          /not a tokenizer file of a known format \(supported: teamtr-char[,)]/.test(error.message)
        );
      });
      writeFileSync(file, '{"type": "teamtr-char",');
      await assert.rejects(loadTokenizer(file), /bad\.json: not valid JSON/);
      await assert.rejects(
        loadTokenizer(path.join(directory, 'absent.json')),
        /absent\.json: file not found/,
      );
    });
  });
});
