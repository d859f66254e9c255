import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HuggingFaceTokenizer } from '../tokenizer/huggingface.js';
import { RandomGenerator } from '../util/random.js';
import { byteLevelTokenizerFiles } from './team-stage-fixture.js';

describe('the team-stage benchmark tokenizer', () => {
  test('has exactly the requested vocabulary, round-trips text, and ends turns with <|im_end|>', () => {
    const files = byteLevelTokenizerFiles(1000);
    const tokenizer = new HuggingFaceTokenizer(files.tokenizer, files.config);
    assert.equal(tokenizer.vocabSize, 1000);
    assert.equal(tokenizer.eosId, 999);
    const text = 'Write problem 3 of the train split in plain words.';
    const ids = tokenizer.encode(text);
    assert.ok(ids.length < text.length, 'merges apply');
    assert.equal(tokenizer.decode(ids), text);
    // Any id decodes (a random model samples all of them).
    assert.equal(typeof tokenizer.decode([300, 700, 998]), 'string');
  });

  test("takes Qwen2.5's vocabulary size (151,936 ids: more than a call's arguments can spread)", () => {
    const files = byteLevelTokenizerFiles(151_936);
    const tokenizer = new HuggingFaceTokenizer(files.tokenizer, files.config);
    assert.equal(tokenizer.vocabSize, 151_936);
  });

  test('a turn of random tokens re-encodes to about as many tokens, as a real model’s turn does', () => {
    // A random model samples ids nearly uniformly; the next agent's context holds the turn's
    // text encoded again. Over the full vocabulary that must not inflate the turn (the earlier
    // byte-pair merges tripled it: most ids decoded to invalid UTF-8).
    const files = byteLevelTokenizerFiles(49_152);
    const tokenizer = new HuggingFaceTokenizer(files.tokenizer, files.config);
    const random = new RandomGenerator('team-stage-fixture-turns');
    let sampled = 0;
    let encoded = 0;
    for (let turn = 0; turn < 20; turn++) {
      const ids = Array.from({ length: 64 }, () => random.nextInt(49_152 - 3));
      sampled += ids.length;
      encoded += tokenizer.encode(tokenizer.decode(ids)).length;
    }
    const ratio = encoded / sampled;
    assert.ok(ratio > 0.9 && ratio < 1.1, `re-encoded/sampled tokens = ${ratio.toFixed(2)}`);
  });
});
