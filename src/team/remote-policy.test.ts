import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { applyLora } from '../nn/lora.js';
import { scoreCompletions } from '../nn/score.js';
import { TransformerLM } from '../nn/transformer.js';
import { createArithmeticChainTask } from '../tasks/index.js';
import { sum, tidy } from '../tensor/index.js';
import { modelEndpoint } from '../serve/endpoints.js';
import { startServer, type RunningServer } from '../serve/server.js';
import { CharTokenizer } from '../tokenizer/char.js';
import { ConfigError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import { LocalPolicy, type CompletionRequest } from './policy.js';
import { RemoteAgentError, RemotePolicy } from './remote-policy.js';
import { rollout } from './rollout.js';
import type { Team } from './team.js';

const tokenizer = new CharTokenizer();
const model = new TransformerLM(
  {
    architecture: 'llama',
    vocabSize: tokenizer.vocabSize,
    hiddenSize: 16,
    layers: 2,
    heads: 2,
    intermediateSize: 24,
    maxPositions: 128,
  },
  new RandomGenerator(15),
);
const inputs = ['Solve. Q: 12+3?\nA:', 'Solve. Q: 7+8?\nA:', 'Check. Q: 1+1?\nA: 2\nB:'];
const requests = (seed: string): CompletionRequest[] =>
  inputs.map((input, index) => ({ input, random: new RandomGenerator(`${seed}/${index}`) }));

let served: RunningServer;
before(async () => {
  served = await startServer({
    port: 0,
    maxConcurrent: 2,
    endpoints: [modelEndpoint({ id: 'tiny', model, tokenizer, promptFormat: 'plain' })],
  });
});
after(() => served.close());

/** A throwaway node:http server answering with `handler`; counts requests and peak concurrency. */
async function tinyServer(
  handler: (request: IncomingMessage, response: ServerResponse, count: number) => void,
): Promise<{ url: string; stats: { requests: number; peak: number }; close: () => Promise<void> }> {
  const stats = { requests: 0, peak: 0 };
  let inFlight = 0;
  const server: Server = createServer((request, response) => {
    stats.requests++;
    inFlight++;
    stats.peak = Math.max(stats.peak, inFlight);
    response.on('close', () => inFlight--);
    request.resume();
    request.on('end', () => handler(request, response, stats.requests));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    stats,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const okChat = (content: string) =>
  JSON.stringify({
    id: 'x',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  });

describe('RemotePolicy: frozen agents behind OpenAI-compatible endpoints', () => {
  for (const api of ['chat', 'completions'] as const) {
    test(`against teamtr serve (${api} API): plays the same turns as the local model, greedy`, async () => {
      const remote = new RemotePolicy({ baseURL: `${served.url}/v1`, model: 'tiny', api });
      assert.equal(remote.model, null);
      const settings = { maxNewTokens: 10, temperature: 0 };
      const [remoteTurns, localTurns] = [
        await remote.complete(requests('a'), settings),
        await new LocalPolicy(model, tokenizer).complete(requests('a'), settings),
      ];
      // Seed 15 makes this tiny model write different turns, some ended by a newline, some by length.
      assert.deepEqual(
        localTurns.map((turn) => turn.finishReason),
        ['length', 'length', 'stop'],
      );
      assert.ok(localTurns.every((turn) => turn.text.length > 0));
      remoteTurns.forEach((turn, index) => {
        assert.equal(turn.text, localTurns[index]!.text);
        assert.equal(turn.finishReason, localTurns[index]!.finishReason);
        assert.deepEqual([turn.tokens, turn.logProbs, turn.inputIds], [[], [], []]);
      });
    });
  }

  test("sampling is reproducible: each request's seed comes from its random stream", async () => {
    const remote = new RemotePolicy({ baseURL: `${served.url}/v1`, model: 'tiny' });
    const settings = { maxNewTokens: 12, temperature: 1 };
    const first = await remote.complete(requests('s'), settings);
    const second = await remote.complete(requests('s'), settings);
    assert.deepEqual(
      second.map((turn) => turn.text),
      first.map((turn) => turn.text),
    );
    const other = await remote.complete(requests('t'), settings);
    assert.notDeepEqual(
      other.map((turn) => turn.text),
      first.map((turn) => turn.text),
    );
  });

  test('a server that never answers times out, is retried, then named in the error', async () => {
    const silent = await tinyServer(() => undefined);
    try {
      const remote = new RemotePolicy({
        baseURL: silent.url,
        model: 'm',
        timeoutSeconds: 0.2,
        retries: 1,
        retryDelaySeconds: 0.01,
      });
      await assert.rejects(
        remote.complete(requests('x').slice(0, 1), { maxNewTokens: 4 }),
        (error: unknown) =>
          error instanceof RemoteAgentError &&
          error.message.includes(
            `${silent.url}/chat/completions: no response within 0.2 s (after 2 attempts)`,
          ),
      );
      assert.equal(silent.stats.requests, 2);
    } finally {
      await silent.close();
    }
  });

  test('garbage and malformed answers are clear errors, not retried', async () => {
    const bodies = [
      '<html>oops</html>',
      JSON.stringify({ choices: [] }),
      JSON.stringify({ choices: [{ message: { content: 42 } }] }),
    ];
    const patterns = [
      /malformed response: not JSON \(HTTP 200, body starts "<html>oops<\/html>"\)/,
      /malformed response: choices: /,
      /malformed response: choices\.0\.message\.content: /,
    ];
    for (const [index, body] of bodies.entries()) {
      const garbage = await tinyServer((_request, response) => response.end(body));
      try {
        const remote = new RemotePolicy({ baseURL: garbage.url, model: 'm', retries: 3 });
        await assert.rejects(
          remote.complete(requests('g').slice(0, 1), { maxNewTokens: 4 }),
          (error: unknown) =>
            error instanceof RemoteAgentError && patterns[index]!.test(error.message),
          patterns[index]!.source,
        );
        assert.equal(garbage.stats.requests, 1);
      } finally {
        await garbage.close();
      }
    }
  });

  test("a refused request names the status, the server's message and the key variable", async () => {
    const guarded = await tinyServer((request, response) => {
      const ok = request.headers.authorization === 'Bearer right';
      response.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      response.end(
        ok
          ? okChat('fine\nignored')
          : JSON.stringify({ error: { message: 'Incorrect API key provided' } }),
      );
    });
    try {
      const wrong = new RemotePolicy(
        { baseURL: guarded.url, model: 'm', apiKeyEnv: 'TEAMTR_TEST_KEY' },
        { environment: { TEAMTR_TEST_KEY: 'wrong' } },
      );
      await assert.rejects(
        wrong.complete(requests('k').slice(0, 1), { maxNewTokens: 4 }),
        (error: unknown) =>
          error instanceof RemoteAgentError &&
          error.status === 401 &&
          /refused the request with HTTP 401: Incorrect API key provided \(check the API key in \$TEAMTR_TEST_KEY\)/.test(
            error.message,
          ),
      );
      assert.equal(guarded.stats.requests, 1, 'a refusal is not retried');
      const right = new RemotePolicy(
        { baseURL: guarded.url, model: 'm', apiKeyEnv: 'TEAMTR_TEST_KEY' },
        { environment: { TEAMTR_TEST_KEY: 'right' } },
      );
      const [turn] = await right.complete(requests('k').slice(0, 1), { maxNewTokens: 4 });
      assert.deepEqual(
        [turn!.text, turn!.finishReason],
        ['fine', 'stop'],
        'a turn is the first line',
      );
      assert.throws(
        () =>
          new RemotePolicy(
            { baseURL: guarded.url, model: 'm', apiKeyEnv: 'TEAMTR_MISSING' },
            { environment: {} },
          ),
        (error: unknown) =>
          error instanceof ConfigError && /TEAMTR_MISSING is not set/.test(error.message),
      );
    } finally {
      await guarded.close();
    }
  });

  test('429 and 5xx are retried with backoff; concurrency stays within the limit', async () => {
    const flaky = await tinyServer((_request, response, count) => {
      if (count <= 2) {
        response.writeHead(count === 1 ? 503 : 429, { 'retry-after': '0' });
        response.end('{"error": {"message": "busy"}}');
        return;
      }
      setTimeout(() => response.end(okChat(`turn ${count}`)), 20);
    });
    try {
      const remote = new RemotePolicy({
        baseURL: flaky.url,
        model: 'm',
        retries: 2,
        retryDelaySeconds: 0.01,
        concurrency: 2,
      });
      const many = Array.from({ length: 6 }, (_unused, index) => ({
        input: `q${index}`,
        random: new RandomGenerator(index),
      }));
      const turns = await remote.complete(many, { maxNewTokens: 4 });
      assert.equal(turns.length, 6);
      assert.ok(turns.every((turn) => /^turn \d+$/.test(turn.text)));
      // These answers carry no `usage`: nothing to count toward a budget.
      assert.ok(turns.every((turn) => turn.generatedTokenCount === 0));
      assert.ok(flaky.stats.peak <= 2, `peak concurrency ${flaky.stats.peak}`);
      assert.equal(flaky.stats.requests, 8);
    } finally {
      await flaky.close();
    }
  });

  test('an unreachable server and a bad config are clear errors', async () => {
    const closed = await tinyServer(() => undefined);
    const url = closed.url;
    await closed.close();
    const remote = new RemotePolicy({ baseURL: url, model: 'm', retries: 0 });
    await assert.rejects(
      remote.complete(requests('u').slice(0, 1), { maxNewTokens: 4 }),
      /connection refused \(is the server running\?\) \(after 1 attempt\)/,
    );
    assert.throws(
      () => new RemotePolicy({ baseURL: 'not a url', model: 'm' }),
      (error: unknown) => error instanceof ConfigError && /baseURL/.test(error.message),
    );
    assert.throws(
      () => new RemotePolicy({ baseURL: url, model: 'm', retry: 3 } as never),
      /unknown key "retry"/,
    );
  });

  test('in a team rollout a remote agent plays text-only turns next to a LoRA-trained local agent', async () => {
    const task = createArithmeticChainTask({ roles: 2 });
    const local = new TransformerLM(
      {
        architecture: 'llama',
        vocabSize: tokenizer.vocabSize,
        hiddenSize: 16,
        layers: 1,
        heads: 2,
        intermediateSize: 24,
        maxPositions: 256,
      },
      new RandomGenerator(8),
    );
    applyLora(local, {
      rank: 2,
      alpha: 4,
      targetModules: ['queryProjection', 'valueProjection'],
      random: new RandomGenerator(9),
    });
    const team: Team = {
      agents: [
        {
          name: 'local',
          rolePrompt: '',
          speakerTag: 'A:',
          policy: new LocalPolicy(local, tokenizer),
        },
        {
          name: 'remote',
          rolePrompt: '',
          speakerTag: 'B:',
          policy: new RemotePolicy({ baseURL: `${served.url}/v1`, model: 'tiny' }),
        },
      ],
      protocol: { turnOrder: [0, 1], answerTurn: 1, permutePerEpisode: false, maxTurnTokens: 8 },
    };
    const problems = task.split('train', { seed: 1, count: 2 });
    const batch = await rollout({ team, task, problems, groupSize: 2, seed: 'team' });
    assert.equal(batch.trajectories.length, 4);
    for (const trajectory of batch.trajectories) {
      const [mine, theirs] = trajectory.turns;
      assert.ok(mine!.tokens.length > 0 && mine!.logProbs.length === mine!.tokens.length);
      assert.deepEqual([theirs!.tokens, theirs!.logProbs, theirs!.inputIds], [[], [], []]);
      assert.equal(trajectory.answerText, theirs!.text);
    }
    // Budgets count both agents' tokens: the remote one's as `teamtr serve` reports them.
    assert.ok(batch.trajectories.every(({ turns }) => turns[1]!.generatedTokenCount! > 0));
    assert.equal(
      batch.generatedTokens,
      batch.trajectories.reduce(
        (total, { turns }) => total + turns[0]!.tokens.length + turns[1]!.generatedTokenCount!,
        0,
      ),
    );
    // The local agent's turns score and backpropagate into its adapters only.
    const items = batch.trajectories.map((trajectory) => ({
      context: trajectory.turns[0]!.inputIds,
      completion: trajectory.turns[0]!.tokens,
    }));
    tidy(() => sum(scoreCompletions(local, items).logProbs).backward());
    assert.ok(
      local
        .namedParameters()
        .every(({ name, tensor }) => (tensor.grad !== null) === /lora[AB]$/.test(name)),
    );
  });
});
