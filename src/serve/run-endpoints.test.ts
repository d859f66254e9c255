import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Team } from '../team/team.js';
import { teamEndpoints } from './run-endpoints.js';
import { startServer, type RunningServer } from './server.js';
import { charTeam } from './test-support/char-team.js';

/**
 * A run's agents served as they took their turns: a plain (character) agent reads plain text,
 * writes one line, takes its own turn length and stop strings by default, and samples at the
 * run's temperature unless the request sets one.
 */
const team: Team = charTeam(['agent-0', 'agent-1'], ['Solve. ', 'Check. '], 70);
team.agents[0]!.maxTurnTokens = 3;
team.agents[1]!.stop = ['e'];
team.protocol.maxTurnTokens = 20;
let server: RunningServer;

before(async () => {
  server = await startServer({
    port: 0,
    endpoints: teamEndpoints(team, { teamId: 'crew', temperature: 0.5 }),
  });
});
after(() => server.close());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function chat(body: Record<string, unknown>): Promise<any> {
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Q: 4+4?\nA:' }], ...body }),
  });
  assert.equal(response.status, 200);
  return response.json();
}

test('the run serves each agent under its name and the team under its id', async () => {
  const models = (await (await fetch(`${server.url}/v1/models`)).json()) as {
    data: Array<{ id: string }>;
  };
  assert.deepEqual(
    models.data.map((model) => model.id),
    ['agent-0', 'agent-1', 'crew'],
  );
});

test("an agent's turn length, end of turn and stop strings are its endpoint's defaults", async () => {
  const short = await chat({ model: 'agent-0', seed: 1, n: 8 });
  const three = await chat({ model: 'agent-0', seed: 1, n: 8, max_tokens: 3 });
  assert.deepEqual(short.choices, three.choices);
  assert.ok(short.usage.completion_tokens <= 8 * 3);
  const long = await chat({ model: 'agent-1', seed: 1, n: 8 });
  const contents: string[] = long.choices.map(
    (choice: { message: { content: string } }) => choice.message.content,
  );
  assert.ok(
    contents.some((content) => content.length > 3),
    'the protocol’s 20 tokens',
  );
  assert.ok(contents.every((content) => !content.includes('e') && !content.includes('\n')));
  assert.ok(
    long.choices.some((choice: { finish_reason: string }) => choice.finish_reason === 'stop'),
    'some turn ended at its stop string or its newline',
  );
  const longer = await chat({ model: 'agent-1', seed: 1, max_tokens: 30, stop: ['zz'] });
  assert.ok(
    !longer.choices[0].message.content.includes('e'),
    "the agent's stop strings still apply",
  );
});

test("an agent samples at the run's temperature unless the request sets one", async () => {
  const byDefault = await chat({ model: 'agent-1', seed: 9, n: 4 });
  const atRun = await chat({ model: 'agent-1', seed: 9, n: 4, temperature: 0.5 });
  const atOne = await chat({ model: 'agent-1', seed: 9, n: 4, temperature: 1 });
  const texts = (response: { choices: Array<{ message: { content: string } }> }) =>
    response.choices.map((choice) => choice.message.content);
  assert.deepEqual(texts(byDefault), texts(atRun));
  assert.notDeepEqual(texts(byDefault), texts(atOne));
});
