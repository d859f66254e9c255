import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HuggingFaceTokenizer } from '../tokenizer/huggingface.js';
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
});
