import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { loadModel } from '../models/load.js';
import { writeHuggingFaceFixture } from '../models/test-support/huggingface-fixture.js';
import type { Team } from '../team/team.js';
import { modelEndpoint } from './endpoints.js';
import { teamEndpoint } from './team-endpoint.js';
import { startServer, type RunningServer } from './server.js';
import { charTeam } from './test-support/char-team.js';

/**
 * `teamtr serve` driven by the official `openai` client, as its users call it: every gap the
 * real-teams issue listed (unsupported fields, n > 1, GET /v1/models/{id}, streamed log-probs,
 * a status before a stream opens, max_tokens and usage of the team model), read through the
 * client's own parsing and error classes.
 */
const root = mkdtempSync(path.join(os.tmpdir(), 'teamtr-openai-'));
const team: Team = charTeam(['agent-0', 'agent-1'], ['Solve. ', 'Check. '], 20);

let server: RunningServer;
let client: OpenAI;

before(async () => {
  writeHuggingFaceFixture(path.join(root, 'qwen'), { modelType: 'qwen2' });
  const qwen = await loadModel(path.join(root, 'qwen'));
  server = await startServer({
    port: 0,
    maxBodyBytes: 65_536,
    maxConcurrent: 1,
    maxQueued: 4,
    endpoints: [
      modelEndpoint({
        id: 'qwen',
        model: qwen.model,
        tokenizer: qwen.tokenizer,
        generation: qwen.generation,
      }),
      teamEndpoint('team', team),
    ],
  });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

const question = [{ role: 'user' as const, content: 'What is 2+3?' }];

async function rejectsWithStatus(promise: Promise<unknown>, status: number, field: RegExp) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof OpenAI.APIError, String(error));
    assert.equal(error.status, status);
    assert.match(error.message, field);
    return true;
  });
}

describe('teamtr serve through the official openai client', () => {
  test('lists and retrieves models', async () => {
    const models = (await client.models.list()).data.map((model) => model.id);
    assert.deepEqual(models.sort(), ['qwen', 'team']);
    assert.equal((await client.models.retrieve('qwen')).id, 'qwen');
    await rejectsWithStatus(client.models.retrieve('nope'), 404, /nope/);
  });

  test('streamed chunks carry every token’s log-prob, exactly as the whole response does', async () => {
    const request = {
      model: 'qwen',
      messages: question,
      max_tokens: 10,
      seed: 7,
      logprobs: true,
      top_logprobs: 2,
    };
    const whole = await client.chat.completions.create(request);
    const expected = whole.choices[0]!.logprobs!.content!;
    assert.equal(expected.length, whole.usage!.completion_tokens);
    const stream = await client.chat.completions.create({ ...request, stream: true });
    let text = '';
    const streamed: typeof expected = [];
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      text += choice.delta.content ?? '';
      streamed.push(...(choice.logprobs?.content ?? []));
    }
    assert.equal(text, whole.choices[0]!.message.content);
    assert.deepEqual(streamed, expected);
    assert.ok(streamed.every((entry) => entry.top_logprobs.length === 2));
  });

  test('n > 1 returns a group of samples', async () => {
    const response = await client.chat.completions.create({
      model: 'qwen',
      messages: question,
      max_tokens: 6,
      n: 3,
      seed: 1,
    });
    assert.deepEqual(
      response.choices.map((choice) => choice.index),
      [0, 1, 2],
    );
  });

  test('fields it cannot honour are refused with 400 naming the field', async () => {
    await rejectsWithStatus(
      client.chat.completions.create({
        model: 'qwen',
        messages: question,
        tools: [{ type: 'function', function: { name: 'add', parameters: {} } }],
      }),
      400,
      /tools/,
    );
    await rejectsWithStatus(
      client.chat.completions.create({
        model: 'qwen',
        messages: question,
        response_format: { type: 'json_object' },
      }),
      400,
      /response_format/,
    );
  });

  test('a streamed request that cannot start is an HTTP error, not a 200 stream', async () => {
    await rejectsWithStatus(
      client.chat.completions.create({
        model: 'qwen',
        messages: [{ role: 'user', content: 'x '.repeat(2000) }],
        stream: true,
      }),
      400,
      /context|tokens/,
    );
  });

  test('a byte-level token holding part of a character reports its raw byte in logprobs', async () => {
    const response = await client.chat.completions.create({
      model: 'qwen',
      messages: question,
      max_tokens: 36,
      seed: 3,
      logprobs: true,
      top_logprobs: 3,
    });
    const entries = response.choices[0]!.logprobs!.content!;
    const alternatives = entries.flatMap((entry) => entry.top_logprobs);
    const partial = [...entries, ...alternatives].filter((entry) => entry.token === '\ufffd');
    assert.ok(partial.length > 0, 'the fixture model samples partial characters');
    for (const entry of partial) {
      assert.equal(entry.bytes!.length, 1);
      assert.ok(entry.bytes![0]! >= 0x80);
    }
  });
});

describe('the served team through the official openai client', () => {
  test('chat: max_tokens bounds the whole completion; usage counts every turn', async () => {
    const response = await client.chat.completions.create({
      model: 'team',
      messages: question,
      max_tokens: 5,
      seed: 2,
    });
    const usage = response.usage!;
    assert.ok(usage.prompt_tokens > 0, 'prompt tokens are counted');
    assert.ok(usage.completion_tokens > 0 && usage.completion_tokens <= 5);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    assert.equal(response.choices[0]!.finish_reason, 'length');
  });

  test('n: 2 gives two different answers; log-probs are the answer tokens’', async () => {
    const response = await client.chat.completions.create({
      model: 'team',
      messages: question,
      n: 2,
      seed: 13,
      logprobs: true,
    });
    const [first, second] = response.choices;
    const tokens = (choice: typeof first) => choice!.logprobs!.content!.map((entry) => entry.token);
    assert.notDeepEqual(tokens(first), tokens(second));
    for (const choice of [first!, second!]) {
      const entries = choice.logprobs!.content!;
      assert.ok(entries.length > 0 && entries.every((entry) => entry.logprob <= 0));
      // Every answer token is listed: their text joined starts with the answer.
      assert.ok(
        entries
          .map((entry) => entry.token)
          .join('')
          .startsWith(choice.message.content!),
      );
    }
  });

  test('a stream sends the answer in more than one content chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'team',
      messages: question,
      seed: 21,
      stream: true,
    });
    const pieces: string[] = [];
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) pieces.push(content);
    }
    assert.ok(pieces.length > 1, `${pieces.length} content chunk(s)`);
    const whole = await client.chat.completions.create({
      model: 'team',
      messages: question,
      seed: 21,
    });
    assert.equal(pieces.join(''), whole.choices[0]!.message.content);
  });

  test('responses: whole and streamed, the same greedy answer as chat completions', async () => {
    const chat = await client.chat.completions.create({
      model: 'team',
      messages: [{ role: 'system', content: 'Think.' }, ...question],
      temperature: 0,
    });
    const request = {
      model: 'team',
      instructions: 'Think.',
      input: 'What is 2+3?',
      temperature: 0,
    };
    const whole = await client.responses.create(request);
    assert.equal(whole.output_text, chat.choices[0]!.message.content);
    assert.equal(whole.usage!.output_tokens, chat.usage!.completion_tokens);
    assert.equal(
      whole.status,
      chat.choices[0]!.finish_reason === 'length' ? 'incomplete' : 'completed',
    );
    const stream = await client.responses.create({ ...request, stream: true });
    const deltas: string[] = [];
    const types: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') deltas.push(event.delta);
    }
    assert.ok(deltas.length > 1);
    assert.equal(deltas.join(''), whole.output_text);
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), `response.${whole.status}`);
    await rejectsWithStatus(
      client.responses.create({ ...request, tools: [{ type: 'web_search' }] }),
      400,
      /tools/,
    );
  });
});
