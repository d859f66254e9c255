import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { modelEndpoint } from './endpoints.js';
import { startServer, type RunningServer } from './server.js';
import { charModel, charTokenizer } from './test-support/char-team.js';

/** POST /v1/responses on one model: the text subset, and what it refuses by name. */
let server: RunningServer;
before(async () => {
  server = await startServer({
    port: 0,
    endpoints: [
      modelEndpoint({
        id: 'plain',
        model: charModel(5),
        tokenizer: charTokenizer,
        promptFormat: 'plain',
      }),
    ],
  });
});
after(() => server.close());

// Response bodies are checked field by field; typing every OpenAI shape here would add nothing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function respond(
  body: Record<string, unknown>,
): Promise<{ status: number; json: Json; text: string }> {
  const response = await fetch(`${server.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'plain', ...body }),
  });
  const text = await response.text();
  return { status: response.status, text, json: body.stream ? null : JSON.parse(text) };
}

describe('POST /v1/responses', () => {
  test('answers input messages with an output message; a max_output_tokens cut is "incomplete"', async () => {
    const input = [
      { role: 'developer', content: 'Be brief.' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Q: 2+2?' }] },
    ];
    const response = await respond({ input, max_output_tokens: 4, seed: 1, temperature: 1 });
    assert.equal(response.status, 200, response.text);
    const body = response.json;
    assert.match(body.id, /^resp_/);
    assert.equal(body.object, 'response');
    const [message] = body.output;
    assert.equal(message.type, 'message');
    assert.equal(message.role, 'assistant');
    assert.equal(message.content[0].type, 'output_text');
    assert.equal(body.usage.total_tokens, body.usage.input_tokens + body.usage.output_tokens);
    if (body.usage.output_tokens === 4) {
      assert.equal(body.status, 'incomplete');
      assert.deepEqual(body.incomplete_details, { reason: 'max_output_tokens' });
    } else assert.equal(body.status, 'completed');
    // The same as chat completions with the same messages and seed.
    const chat = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'plain',
        messages: [
          { role: 'developer', content: 'Be brief.' },
          { role: 'user', content: 'Q: 2+2?' },
        ],
        max_tokens: 4,
        seed: 1,
      }),
    });
    const expected = (await chat.json()) as { choices: Array<{ message: { content: string } }> };
    assert.equal(message.content[0].text, expected.choices[0]!.message.content);
  });

  test('a stream: created, the text in deltas, then completed or incomplete', async () => {
    const response = await respond({
      input: 'Q: 1+1?',
      max_output_tokens: 6,
      seed: 2,
      stream: true,
    });
    assert.equal(response.status, 200);
    const events = response.text
      .split('\n\n')
      .filter(Boolean)
      .map((frame) => {
        const [eventLine, dataLine] = frame.split('\n');
        const data = JSON.parse(dataLine!.slice('data: '.length)) as {
          type: string;
          sequence_number: number;
        };
        assert.equal(eventLine, `event: ${data.type}`);
        return data;
      });
    assert.deepEqual(
      events.map((event) => event.sequence_number),
      events.map((_event, index) => index),
    );
    assert.deepEqual(
      events.slice(0, 4).map((event) => event.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
      ],
    );
    assert.match(events.at(-1)!.type, /^response\.(completed|incomplete)$/);
  });

  test('what is not text generation is refused with 400 naming it', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ input: 'x', tools: [{ type: 'web_search' }] }, /^tools: not supported/],
      [{ input: 'x', previous_response_id: 'resp_1' }, /^previous_response_id: not supported/],
      [{ input: 'x', text: { format: { type: 'json_object' } } }, /^text\.format: only/],
      [
        { input: [{ type: 'function_call_output', call_id: 'a', output: '1' }] },
        /^input\[0\]: only messages/,
      ],
      [
        { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
        /^input\[0\]\.content\[0\]: only text parts/,
      ],
      [{ input: 'x', max_output_token: 3 }, /unknown parameter "max_output_token"/],
      [{ input: 'x', include: ['reasoning.encrypted_content'] }, /^include\.0: /],
    ];
    for (const [body, message] of cases) {
      const response = await respond(body);
      assert.equal(response.status, 400, response.text);
      assert.match(response.json.error.message, message);
    }
  });
});
