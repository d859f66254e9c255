import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { playEpisodes } from '../team/episodes.js';
import type { Team } from '../team/team.js';
import { startServer, type RunningServer } from './server.js';
import { teamEndpoint } from './team-endpoint.js';
import { charTeam } from './test-support/char-team.js';

/**
 * The team over HTTP, with OpenAI's semantics: max_tokens bounds the whole completion,
 * finish_reason says when a limit cut it, n samples differ at the default temperature (1),
 * a system message is used, streaming sends the answer as it is drawn, and log-probs are the
 * answer turn's. Each answer is checked against playEpisodes, the path the trainer samples by.
 */
const team: Team = charTeam(['agent-0', 'agent-1'], ['Solve. ', 'Check. '], 40);
let server: RunningServer;

before(async () => {
  server = await startServer({ port: 0, endpoints: [teamEndpoint('team', team)] });
});
after(() => server.close());

// Response bodies are checked field by field; typing every OpenAI shape here would add nothing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function post(body: Record<string, unknown>, route = '/v1/chat/completions') {
  const response = await fetch(`${server.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'team', ...body }),
  });
  const text = await response.text();
  return { status: response.status, text, json: (body.stream ? null : JSON.parse(text)) as Json };
}

const question = (content: string) => [{ role: 'user', content }];

/** What the trainer's path plays for this prompt and seed. */
const played = (prompt: string, seed: number, extra: { n?: number; maxTokens?: number } = {}) =>
  playEpisodes({
    team,
    prompts: [prompt],
    groupSize: extra.n ?? 1,
    seed: String(seed),
    ...(extra.maxTokens ? { maxEpisodeTokens: extra.maxTokens } : {}),
  });

const turnTokens = (choice: Json): number[][] =>
  choice.teamtr.turns.map((turn: Json) => turn.token_ids);

describe('the team served with OpenAI semantics', () => {
  test('max_tokens bounds all turns together; a cut answer finishes with "length"', async () => {
    const free = await post({ messages: question('Q: 2+2?'), seed: 3, n: 4 });
    const bounded = await post({ messages: question('Q: 2+2?'), seed: 3, n: 4, max_tokens: 10 });
    const expected = await played('Q: 2+2?', 3, { n: 4, maxTokens: 10 });
    assert.equal(bounded.json.usage.completion_tokens, expected.generatedTokens);
    assert.ok(free.json.usage.completion_tokens > bounded.json.usage.completion_tokens);
    bounded.json.choices.forEach((choice: Json, index: number) => {
      const tokens = turnTokens(choice);
      assert.ok(tokens.flat().length <= 10, 'at most max_tokens over every turn');
      assert.deepEqual(
        tokens,
        expected.episodes[index]!.turns.map((turn) => turn.tokens),
      );
      assert.equal(choice.finish_reason, 'length');
    });
    // Without max_tokens a choice is "length" exactly when one of its turns hit its limit.
    for (const choice of free.json.choices) {
      const cut = choice.teamtr.turns.some((turn: Json) => turn.finish_reason === 'length');
      assert.equal(choice.finish_reason, cut ? 'length' : 'stop');
    }
  });

  test('n: 2 gives two different samples at the default temperature, 1', async () => {
    const response = await post({ messages: question('Q: 7-1?'), n: 2, seed: 8 });
    const [first, second] = response.json.choices;
    assert.notDeepEqual(turnTokens(first), turnTokens(second));
    const expected = await played('Q: 7-1?', 8, { n: 2 });
    assert.deepEqual(
      [turnTokens(first), turnTokens(second)],
      expected.episodes.map((episode) => episode.turns.map((turn) => turn.tokens)),
    );
  });

  test('a system message starts the shared context, before the problem', async () => {
    const messages = [{ role: 'system', content: 'Be brief.' }, ...question('Q: 1+1?')];
    const response = await post({ messages, seed: 2 });
    const expected = await played('Be brief.\nQ: 1+1?', 2);
    assert.deepEqual(
      turnTokens(response.json.choices[0]),
      expected.episodes[0]!.turns.map((turn) => turn.tokens),
    );
    const plain = await post({ messages: question('Q: 1+1?'), seed: 2 });
    assert.ok(response.json.usage.prompt_tokens > plain.json.usage.prompt_tokens);
  });

  test('what the team cannot honour is refused with 400 naming it, never dropped', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [
        { messages: [...question('a'), { role: 'assistant', content: 'b' }, ...question('c')] },
        /one problem.*user, assistant, user/,
      ],
      [{ messages: [{ role: 'system', content: 'only a system message' }] }, /one non-empty user/],
      [{ messages: question('a'), top_p: 0.5 }, /^top_p: /],
      [{ messages: question('a'), stop: ['x'] }, /^stop: /],
      [{ messages: question('a'), logprobs: true, top_logprobs: 2 }, /^top_logprobs: /],
    ];
    for (const [body, message] of cases) {
      const response = await post(body);
      assert.equal(response.status, 400, response.text);
      assert.match(response.json.error.message, message);
    }
  });

  test('streaming sends the answer as it is drawn, in several chunks, with its log-probs', async () => {
    const request = { messages: question('Q: 3+4?'), seed: 11, logprobs: true };
    const whole = await post(request);
    const streamed = await post({ ...request, stream: true });
    const chunks = streamed.text
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: {'))
      .map((frame) => JSON.parse(frame.slice(6)) as Json);
    const contents = chunks.flatMap((chunk) =>
      chunk.choices[0]?.delta.content ? [chunk.choices[0].delta.content as string] : [],
    );
    assert.ok(contents.length > 1, `the answer came in ${contents.length} chunk(s)`);
    const answer = whole.json.choices[0];
    assert.equal(contents.join(''), answer.message.content);
    assert.deepEqual(
      chunks.flatMap((chunk) => chunk.choices[0]?.logprobs?.content ?? []),
      answer.logprobs.content,
    );
    const expected = await played('Q: 3+4?', 11);
    const answerTurn = expected.episodes[0]!.turns[team.protocol.answerTurn]!;
    assert.deepEqual(
      answer.logprobs.content.map((entry: Json) => entry.logprob),
      answerTurn.logProbs,
    );
    const last = chunks.at(-1)!.choices[0];
    assert.equal(last.finish_reason, answer.finish_reason);
    assert.deepEqual(last.teamtr, answer.teamtr);
    assert.ok(streamed.text.endsWith('data: [DONE]\n\n'));
  });

  test('/v1/completions plays the team on the prompt (16 tokens in all unless max_tokens says)', async () => {
    const response = await post({ prompt: 'Q: 5+5?', seed: 6 }, '/v1/completions');
    assert.equal(response.status, 200, response.text);
    const expected = await played('Q: 5+5?', 6, { maxTokens: 16 });
    assert.equal(response.json.usage.completion_tokens, expected.generatedTokens);
    assert.equal(
      response.json.choices[0].text,
      expected.episodes[0]!.turns[team.protocol.answerTurn]?.text ?? '',
    );
  });
});
