import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TeamtrError } from '../../util/errors.js';
import { tokenizerFromJSON } from '../load.js';
import type { Tokenizer } from '../types.js';

/**
 * The behaviour every Tokenizer implementation must show; each implementation's test file
 * calls this with a factory and a sample text its vocabulary covers.
 */
export function describeTokenizerContract(
  name: string,
  createTokenizer: () => Tokenizer,
  sampleText: string,
): void {
  describe(`Tokenizer contract: ${name}`, () => {
    test('encode gives integer ids below vocabSize, and decode inverts it', () => {
      const tokenizer = createTokenizer();
      assert.ok(Number.isInteger(tokenizer.vocabSize) && tokenizer.vocabSize > 0);
      const ids = tokenizer.encode(sampleText);
      assert.ok(ids.length > 0);
      for (const id of ids)
        assert.ok(Number.isInteger(id) && id >= 0 && id < tokenizer.vocabSize, `id ${id}`);
      assert.equal(tokenizer.decode(ids), sampleText);
      assert.deepEqual(tokenizer.encode(''), []);
    });

    test('idToToken and tokenToId are inverse over the whole vocabulary', () => {
      const tokenizer = createTokenizer();
      for (let id = 0; id < tokenizer.vocabSize; id++) {
        const token = tokenizer.idToToken(id);
        assert.notEqual(token, undefined, `id ${id}`);
        assert.equal(tokenizer.tokenToId(token!), id, `token ${JSON.stringify(token)}`);
      }
      assert.equal(tokenizer.idToToken(tokenizer.vocabSize), undefined);
      assert.equal(tokenizer.idToToken(-1), undefined);
    });

    test('special ids are distinct, in range, and dropped by skipSpecialTokens', () => {
      const tokenizer = createTokenizer();
      const specials = [tokenizer.bosId, tokenizer.eosId, tokenizer.padId, tokenizer.unkId].filter(
        (id): id is number => id !== undefined,
      );
      assert.equal(new Set(specials).size, specials.length);
      for (const id of specials) assert.ok(id >= 0 && id < tokenizer.vocabSize);
      if (tokenizer.eosId !== undefined) {
        const ids = [...tokenizer.encode(sampleText), tokenizer.eosId];
        assert.equal(tokenizer.decode(ids, { skipSpecialTokens: true }), sampleText);
        assert.notEqual(tokenizer.decode(ids), sampleText);
        // Text that spells a special token must not become it.
        const spelled = tokenizer.idToToken(tokenizer.eosId)!;
        assert.equal(tokenizer.encode(spelled).includes(tokenizer.eosId), false);
      }
    });

    test('decode refuses ids outside the vocabulary', () => {
      const tokenizer = createTokenizer();
      assert.throws(() => tokenizer.decode([tokenizer.vocabSize]), TeamtrError);
      assert.throws(() => tokenizer.decode([-1]), TeamtrError);
    });

    test('toJSON loads back into an equivalent tokenizer', () => {
      const tokenizer = createTokenizer();
      const json = JSON.parse(JSON.stringify(tokenizer.toJSON()));
      const reloaded = tokenizerFromJSON(json, 'tokenizer.json');
      assert.equal(reloaded.vocabSize, tokenizer.vocabSize);
      assert.deepEqual(reloaded.encode(sampleText), tokenizer.encode(sampleText));
      assert.deepEqual(
        [reloaded.bosId, reloaded.eosId, reloaded.padId, reloaded.unkId],
        [tokenizer.bosId, tokenizer.eosId, tokenizer.padId, tokenizer.unkId],
      );
    });
  });
}
