import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { loadModel } from '../models/load.js';
import { writeHuggingFaceFixture } from '../models/test-support/huggingface-fixture.js';
import { RandomGenerator } from '../util/random.js';
import { LocalPolicy, TurnDecoder, type AgentPolicy } from './policy.js';
import { tinyTeam } from './test-support/tiny-team.js';
import { TurnTextStream, type StreamedToken } from './turn-stream.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-turn-stream-'));
after(() => rmSync(directory, { recursive: true, force: true }));

/** Streams `count` turns of `policy` and checks each against the finished completion. */
async function streamTurns(policy: AgentPolicy, stop: string[], count: number) {
  const requests = Array.from({ length: count }, (_unused, index) => ({
    input: 'ab\nA:',
    view: { rolePrompt: 'Answer.', prompt: 'What is 2+3?', turns: [] },
    random: new RandomGenerator(`stream/${index}`),
  }));
  const pieces = requests.map(() => [] as Array<{ text: string; tokens: StreamedToken[] }>);
  const streams = requests.map(
    (_request, index) =>
      new TurnTextStream(new TurnDecoder(policy.tokenizer), stop, (text, tokens) =>
        pieces[index]!.push({ text, tokens: [...tokens] }),
      ),
  );
  const completions = await policy.complete(requests, {
    maxNewTokens: 12,
    stop,
    onToken: (index, token, logProb) => streams[index]!.push({ token, logProb }),
  });
  let heldBack = 0;
  completions.forEach((completion, index) => {
    streams[index]!.finish(completion.text);
    const streamed = pieces[index]!;
    assert.equal(streamed.map((piece) => piece.text).join(''), completion.text);
    assert.deepEqual(
      streamed.flatMap((piece) => piece.tokens.map((entry) => entry.token)),
      completion.tokens,
    );
    assert.deepEqual(
      streamed.flatMap((piece) => piece.tokens.map((entry) => entry.logProb)),
      completion.logProbs,
    );
    for (const piece of streamed.slice(0, -1)) assert.ok(!piece.text.endsWith('\ufffd'));
    for (let length = 1; length < completion.tokens.length; length++)
      if (policy.tokenizer.decode(completion.tokens.slice(0, length)).endsWith('\ufffd'))
        heldBack++;
  });
  return { completions, pieces, heldBack };
}

describe("a turn's text streamed as its tokens are drawn", () => {
  test('a byte-level chat model: pieces never split a character and join to the turn', async () => {
    writeHuggingFaceFixture(path.join(directory, 'qwen'), { modelType: 'qwen2' });
    const loaded = await loadModel(path.join(directory, 'qwen'));
    const policy = new LocalPolicy(loaded.model, loaded.tokenizer);
    const { pieces, heldBack } = await streamTurns(policy, [], 16);
    assert.ok(heldBack > 0, 'some turn had a partial character to hold back');
    assert.ok(
      pieces.some((turn) => turn.length > 2),
      'turns arrive in several pieces',
    );
    loaded.model.destroy();
  });

  test('a stop string: nothing of it, nor of what follows, is streamed', async () => {
    const policy = tinyTeam().agents[0]!.policy;
    const { completions, pieces } = await streamTurns(policy, ['ba'], 24);
    assert.ok(
      completions.some((completion) => policy.tokenizer.decode(completion.tokens).includes('ba')),
      'some turn met the stop string',
    );
    for (const turn of pieces)
      assert.ok(
        !turn
          .map((piece) => piece.text)
          .join('')
          .includes('ba'),
      );
  });
});
