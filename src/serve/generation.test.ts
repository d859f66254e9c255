import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HuggingFaceTokenizer } from '../tokenizer/huggingface.js';
import { byteLevelBpeFixture } from '../tokenizer/test-support/byte-level-bpe.js';
import { CompletionText } from './generation.js';

const fixture = byteLevelBpeFixture();
const tokenizer = new HuggingFaceTokenizer(fixture.tokenizer, fixture.config);

function stream(
  text: string,
  stopStrings: string[],
): { deltas: string[]; final: string; stopped: boolean } {
  const deltas: string[] = [];
  const completion = new CompletionText(tokenizer, stopStrings, (delta) => deltas.push(delta));
  let stopped = false;
  // Byte by byte: every multi-byte character arrives split over several tokens.
  for (const byte of Buffer.from(text, 'utf8')) {
    if (completion.push(byte)) {
      stopped = true;
      break;
    }
  }
  completion.flush();
  return { deltas, final: completion.text, stopped };
}

describe('streamed completion text', () => {
  test('deltas never split a character and concatenate to the final text', () => {
    const { deltas, final, stopped } = stream('héllo 😀 wörld', []);
    assert.equal(final, 'héllo 😀 wörld');
    assert.equal(stopped, false);
    assert.equal(deltas.join(''), final);
    assert.ok(
      deltas.every((delta) => !delta.includes('\ufffd')),
      JSON.stringify(deltas),
    );
  });

  test('stop strings cut the text, and no delta ever shows part of one', () => {
    const { deltas, final, stopped } = stream('answer: 42\nB: more', ['\nB:']);
    assert.equal(final, 'answer: 42');
    assert.equal(stopped, true);
    assert.equal(deltas.join(''), 'answer: 42');
    const withoutStop = stream('a\nb', ['\nB:']);
    assert.equal(withoutStop.final, 'a\nb');
    assert.equal(
      withoutStop.deltas.join(''),
      'a\nb',
      'a held-back prefix is released once it cannot start the stop string',
    );
  });
});
