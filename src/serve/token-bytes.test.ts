import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CharTokenizer } from '../tokenizer/char.js';
import { HuggingFaceTokenizer } from '../tokenizer/huggingface.js';
import { byteLevelBpeFixture } from '../tokenizer/test-support/byte-level-bpe.js';
import { tokenBytes } from './token-bytes.js';

const fixture = byteLevelBpeFixture();
const tokenizer = new HuggingFaceTokenizer(fixture.tokenizer, fixture.config);

test('a byte-level token holding part of a character reports its raw byte, not U+FFFD', () => {
  const text = 'né → 🙂';
  const ids = tokenizer.encode(text);
  const partial = ids.filter((id) => tokenizer.decode([id]).includes('\ufffd'));
  assert.ok(partial.length >= 3, 'the fixture splits é, → and 🙂 into byte tokens');
  for (const id of partial) assert.notDeepEqual(tokenBytes(tokenizer, id), [239, 191, 189]);
  // Joined, the tokens' bytes are the text's UTF-8.
  assert.deepEqual(
    ids.flatMap((id) => tokenBytes(tokenizer, id)),
    [...Buffer.from(text, 'utf8')],
  );
  assert.deepEqual(tokenBytes(tokenizer, 0xc3), [0xc3]);
});

test('whole tokens report their text’s UTF-8, specials and character tokens included', () => {
  const endOfTurn = tokenizer.tokenToId('<|im_end|>')!;
  assert.deepEqual(tokenBytes(tokenizer, endOfTurn), [...Buffer.from('<|im_end|>', 'utf8')]);
  const characters = new CharTokenizer({ alphabet: 'aé' });
  const accented = characters.encode('é')[0]!;
  assert.deepEqual(tokenBytes(characters, accented), [0xc3, 0xa9]);
});
