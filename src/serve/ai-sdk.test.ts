import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import type { Team } from '../team/team.js';
import { startServer, type RunningServer } from './server.js';
import { teamEndpoint } from './team-endpoint.js';
import { charTeam } from './test-support/char-team.js';

/**
 * The served team through the Vercel AI SDK, as its users call it: `@ai-sdk/openai-compatible`
 * (chat completions) and `@ai-sdk/openai`, whose default `openai('team')` calls POST
 * /v1/responses. Answers are compared with the server's own chat completions answer.
 */
const team: Team = charTeam(['solver', 'checker'], ['Solve. ', 'Check. '], 60);
let server: RunningServer;

before(async () => {
  server = await startServer({ port: 0, endpoints: [teamEndpoint('team', team)] });
});
after(() => server.close());

/** The server's chat completions answer, straight over HTTP. */
async function chatAnswer(body: Record<string, unknown>) {
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'team', ...body }),
  });
  assert.equal(response.status, 200);
  return (await response.json()) as {
    choices: Array<{ message: { content: string }; finish_reason: string }>;
    usage: { completion_tokens: number; prompt_tokens: number };
  };
}

async function collect(stream: AsyncIterable<string>): Promise<string[]> {
  const pieces: string[] = [];
  for await (const piece of stream) pieces.push(piece);
  return pieces;
}

describe('the AI SDK with @ai-sdk/openai-compatible (chat completions)', () => {
  const provider = () => createOpenAICompatible({ name: 'teamtr', baseURL: `${server.url}/v1` });

  test('generateText, with a system message, is the seeded answer', async () => {
    const answer = await generateText({
      model: provider()('team'),
      system: 'Be brief.',
      prompt: 'Q: 2+5?',
      seed: 4,
    });
    const expected = await chatAnswer({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Q: 2+5?' },
      ],
      seed: 4,
    });
    assert.equal(answer.text, expected.choices[0]!.message.content);
    assert.equal(answer.usage.outputTokens, expected.usage.completion_tokens);
    assert.equal(answer.finishReason, expected.choices[0]!.finish_reason);
  });

  test('streamText arrives in more than one piece', async () => {
    const stream = streamText({ model: provider()('team'), prompt: 'Q: 9-4?', seed: 12 });
    const pieces = await collect(stream.textStream);
    assert.ok(pieces.length > 1, `${pieces.length} piece(s)`);
    const expected = await chatAnswer({
      messages: [{ role: 'user', content: 'Q: 9-4?' }],
      seed: 12,
    });
    assert.equal(pieces.join(''), expected.choices[0]!.message.content);
  });
});

describe("the AI SDK with @ai-sdk/openai: openai('team') calls /v1/responses", () => {
  const openai = () => createOpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused' });
  // The Responses API has no seed: greedy answers (temperature 0) are compared.
  const greedy = { messages: [{ role: 'user', content: 'Q: 6+1?' }], temperature: 0 };

  test('generateText', async () => {
    const answer = await generateText({
      model: openai()('team'),
      prompt: 'Q: 6+1?',
      temperature: 0,
      maxOutputTokens: 12,
    });
    const expected = await chatAnswer({ ...greedy, max_tokens: 12 });
    assert.equal(answer.text, expected.choices[0]!.message.content);
    assert.equal(answer.usage.outputTokens, expected.usage.completion_tokens);
    assert.equal(answer.usage.inputTokens, expected.usage.prompt_tokens);
    assert.equal(answer.finishReason, expected.choices[0]!.finish_reason);
  });

  test('streamText arrives in more than one piece', async () => {
    const stream = streamText({ model: openai()('team'), prompt: 'Q: 6+1?', temperature: 0 });
    const pieces = await collect(stream.textStream);
    assert.ok(pieces.length > 1, `${pieces.length} piece(s)`);
    const expected = await chatAnswer(greedy);
    assert.equal(pieces.join(''), expected.choices[0]!.message.content);
    assert.equal(await stream.finishReason, expected.choices[0]!.finish_reason);
  });
});
