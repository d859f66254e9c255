import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModel } from '../../models/load.js';
import { modelEndpoint, type ServedModel } from '../../serve/endpoints.js';
import { RequestError } from '../../serve/protocol.js';
import { startServer, type RunningServer } from '../../serve/server.js';
import { RemoteAgentError } from '../../team/remote-policy.js';
import type { TrainConfigInput } from '../config/train-config.js';
import type { UpdateRecord } from '../records.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import {
  comparableRecords,
  directorySnapshot,
  readRecords,
  savedUnit,
} from '../test-support/run-files.js';
import { train } from '../trainer.js';

/**
 * A team whose middle agent is a frozen model behind the project's own OpenAI-compatible
 * server (what `teamtr serve --model DIR` runs), trained end to end with `train()`: the remote
 * turns go over HTTP, only the local agents are updated, and the run resumes bit-identically
 * after the server fails.
 */

interface ServedAgent {
  server: RunningServer;
  /** Completions that reached the served model over HTTP. */
  requests: number;
  /** While true, every request is refused with HTTP 503 (a server that went down). */
  failing: boolean;
  /** The served model's weights, to prove they never change. */
  weights: () => number[][];
}

let fixture: Awaited<ReturnType<typeof createTrainingFixture>>;
let served: ServedAgent;
const remoteName = 'agent1-remote';

/** Serves `directory` like `teamtr serve --model`, counting the completions it answers. */
async function serveModel(directory: string): Promise<ServedAgent> {
  const loaded = await loadModel(directory);
  const inner = modelEndpoint({
    id: remoteName,
    model: loaded.model,
    tokenizer: loaded.tokenizer,
    generation: loaded.generation,
  });
  const state = { requests: 0, failing: false };
  const counting: ServedModel = {
    id: inner.id,
    complete: (request, events) => {
      if (state.failing) throw new RequestError(503, 'the model is offline');
      state.requests++;
      return inner.complete(request, events);
    },
  };
  const server = await startServer({ endpoints: [counting], port: 0, maxConcurrent: 2 });
  return Object.assign(state, {
    server,
    weights: () => loaded.model.stateDict().map((entry) => Array.from(entry.data)),
  });
}

/** The fixture's team with agent1 played by the server: a frozen agent between two local ones. */
function remoteConfig(): TrainConfigInput {
  const agents = fixture.config.agents!;
  return {
    ...fixture.config,
    agents: [
      agents[0]!,
      {
        name: 'agent1',
        rolePrompt: '',
        endpoint: { baseURL: `${served.server.url}/v1`, model: remoteName, retries: 0 },
      },
      agents[2]!,
    ],
  };
}

/** Trains the remote team; the server starts refusing right after the stage-2 checkpoint. */
function trainUntilTheServerFails(runDirectory: string): Promise<unknown> {
  return train({
    config: remoteConfig(),
    runDirectory,
    onProgress: (event) => {
      if (event.kind === 'checkpoint' && event.stage === 2) served.failing = true;
    },
  });
}

const updates = (runDirectory: string) =>
  readRecords(runDirectory).filter((record): record is UpdateRecord => record.type === 'update');

before(async () => {
  fixture = await createTrainingFixture();
  served = await serveModel(path.join(fixture.directory, 'agent1'));
});
after(async () => {
  await served.server.close();
  rmSync(fixture.directory, { recursive: true, force: true });
});

describe('training with a frozen remote agent', () => {
  test('its turns go over HTTP; only the local agents are updated, inside their trust regions', async () => {
    const runDirectory = path.join(fixture.directory, 'straight');
    const servedFiles = directorySnapshot(path.join(fixture.directory, 'agent1'));
    const servedWeights = served.weights();
    const requestsBefore = served.requests;
    const summary = await train({ config: remoteConfig(), runDirectory });

    const records = readRecords(runDirectory);
    const stages = records.filter((record) => record.type === 'stage');
    const evaluations = records.filter((record) => record.type === 'eval');
    assert.equal(summary.stages, 4);
    assert.equal(stages.length, 4);
    assert.deepEqual(
      evaluations.map((record) => record.stage),
      [0, 2, 4],
    );
    // Per stage: agent2 (turn 2) is updated on the stage's full batch, agent0 (turn 0) on a
    // batch resampled from turn 2, which reuses the remote turns; the stage's last batch is
    // resampled from turn 0. So the remote agent answers 2 of the 3 batches, 24 trajectories
    // each, plus one turn per problem of each evaluation (10 problems).
    const trained = updates(runDirectory);
    for (const stage of [1, 2, 3, 4]) {
      const ofStage = trained.filter((update) => update.stage === stage);
      assert.deepEqual(
        ofStage.map((update) => [update.agent, update.resampledFromTurn]),
        [
          ['agent2', 0],
          ['agent0', 2],
        ],
      );
    }
    assert.equal(served.requests - requestsBefore, 4 * 2 * 24 + evaluations.length * 10);

    // The remote agent is never updated: no update or certificate, no checkpoint, same weights.
    assert.equal(summary.updates, 8);
    assert.ok(trained.every((update) => update.agent !== 'agent1'));
    assert.deepEqual(readdirSync(path.join(runDirectory, 'checkpoint', 'units')).sort(), [
      'agent0',
      'agent2',
    ]);
    assert.deepEqual(served.weights(), servedWeights);
    assert.deepEqual(directorySnapshot(path.join(fixture.directory, 'agent1')), servedFiles);

    // The local agents moved, and every update ended inside its trust region.
    for (const update of trained) {
      assert.ok(update.inRegion, `update ${update.globalUpdate} left its region`);
      assert.ok(update.kl <= update.delta + 1e-9, `KL ${update.kl} > δ ${update.delta}`);
      assert.ok(Number.isFinite(update.certificate));
      assert.ok(update.measuredImprovement !== null);
    }
    for (const agent of ['agent0', 'agent2']) {
      assert.ok(trained.some((update) => update.agent === agent && update.kl > 0));
      const initial = (await loadModel(path.join(fixture.directory, agent))).model.stateDict();
      const final = (await savedUnit(runDirectory, agent)) as { parameters: [string, number[]][] };
      assert.notDeepEqual(
        final.parameters.map(([, values]) => values),
        initial.map((entry) => Array.from(entry.data)),
        `${agent} was never changed`,
      );
    }
    // Evaluations report the remote agent like any other; the resolved config records it frozen.
    for (const evaluation of evaluations) {
      assert.deepEqual(
        evaluation.agents.map((agent) => agent.agent),
        ['agent0', 'agent1', 'agent2'],
      );
    }
    const config = JSON.parse(readFileSync(path.join(runDirectory, 'config.json'), 'utf8')) as {
      agents: Array<{ trainable: boolean; endpoint?: { model: string } }>;
    };
    assert.deepEqual(
      config.agents.map((agent) => [agent.trainable, agent.endpoint?.model ?? null]),
      [
        [true, null],
        [false, remoteName],
        [true, null],
      ],
    );
  });

  test('a run whose remote agent fails resumes to the same end as an uninterrupted one', async () => {
    const straight = path.join(fixture.directory, 'straight');
    assert.ok(existsSync(path.join(straight, 'summary.json')), 'runs after the first test');
    // The server fails after the checkpoint of stage 2, in the middle of stage 3...
    const crashed = path.join(fixture.directory, 'crashed');
    await assert.rejects(
      trainUntilTheServerFails(crashed),
      (error: unknown) =>
        error instanceof RemoteAgentError &&
        error.message.includes(`${served.server.url}/v1/chat/completions`) &&
        error.message.includes('HTTP 503: the model is offline'),
    );
    // ...or before anything was checkpointed.
    const early = path.join(fixture.directory, 'early');
    await assert.rejects(train({ config: remoteConfig(), runDirectory: early }), RemoteAgentError);
    assert.equal(existsSync(path.join(early, 'checkpoint')), false);
    served.failing = false;
    for (const runDirectory of [crashed, early]) {
      const summary = await train({ config: {}, runDirectory, resume: true });
      assert.equal(summary.stages, 4);
      assert.deepEqual(comparableRecords(runDirectory), comparableRecords(straight));
      for (const agent of ['agent0', 'agent2'])
        assert.deepEqual(await savedUnit(runDirectory, agent), await savedUnit(straight, agent));
    }
  });

  test('a server that comes back at another address: resume moves the agent there', async () => {
    const straight = path.join(fixture.directory, 'straight');
    const moved = path.join(fixture.directory, 'moved');
    await assert.rejects(trainUntilTheServerFails(moved), RemoteAgentError);
    // The old address keeps failing; the same model answers at a new one.
    const replacement = await serveModel(path.join(fixture.directory, 'agent1'));
    const newAddress = `${replacement.server.url}/v1`;
    const configFile = path.join(moved, 'config.json');
    try {
      const configBefore = readFileSync(configFile, 'utf8');
      const refusals: Array<[Record<string, string>, RegExp]> = [
        [
          { agent9: newAddress },
          /the run has no agent "agent9" \(agents: agent0, agent1, agent2\)/,
        ],
        [{ agent0: newAddress }, /agent "agent0" is not a remote agent/],
        [{ agent1: 'not an address' }, /baseURL/],
      ];
      for (const [endpoints, message] of refusals) {
        await assert.rejects(
          train({ config: {}, runDirectory: moved, resume: true, endpoints }),
          message,
        );
        assert.equal(
          readFileSync(configFile, 'utf8'),
          configBefore,
          'a refused move writes nothing',
        );
      }
      await assert.rejects(
        train({
          config: remoteConfig(),
          runDirectory: path.join(fixture.directory, 'never'),
          endpoints: { agent1: newAddress },
        }),
        /moving endpoints goes with resume/,
      );
      const summary = await train({
        config: {},
        runDirectory: moved,
        resume: true,
        endpoints: { agent1: newAddress },
      });
      assert.equal(summary.stages, 4);
      assert.deepEqual(comparableRecords(moved), comparableRecords(straight));
      assert.ok(replacement.requests > 0, 'the resumed stages asked the new address');
      const config = JSON.parse(readFileSync(configFile, 'utf8')) as {
        agents: Array<{ endpoint?: { baseURL: string } }>;
      };
      assert.equal(config.agents[1]!.endpoint!.baseURL, newAddress);
    } finally {
      served.failing = false;
      await replacement.server.close();
    }
  });

  test('the single-model baseline plays the local roles and leaves the remote one to its server', async () => {
    const runDirectory = path.join(fixture.directory, 'single');
    const requestsBefore = served.requests;
    await train({
      config: { ...remoteConfig(), schedule: 'single', budget: { maxStages: 1 } },
      runDirectory,
    });
    const [update] = updates(runDirectory);
    assert.equal(update!.agent, 'agent0');
    assert.ok(update!.tokens > 0);
    assert.ok(served.requests > requestsBefore);
  });

  test('configs that cannot work are refused with the reason', async () => {
    const config = remoteConfig();
    const remote = config.agents![1]!;
    const cases: Array<[TrainConfigInput['agents'], RegExp]> = [
      [
        [config.agents![0]!, { ...remote, lora: { rank: 2 } }, config.agents![2]!],
        /agents\[1\]\.lora: LoRA adapters need a local model/,
      ],
      [
        [config.agents![0]!, { ...remote, trainable: true }, config.agents![2]!],
        /agents\[1\]\.trainable: a remote agent \(endpoint\) has no local weights to train/,
      ],
      [
        [remote, { ...remote, name: 'agent9' }],
        /every agent is remote \(endpoint\); at least one needs a local "model"/,
      ],
      [[{ ...config.agents![0]!, trainable: false }, remote], /no agent is trainable/],
    ];
    for (const [index, [agents, message]] of cases.entries()) {
      const runDirectory = path.join(fixture.directory, `refused-${index}`);
      await assert.rejects(train({ config: { ...config, agents }, runDirectory }), message);
      assert.equal(existsSync(runDirectory), false, 'nothing is written for a refused config');
    }
  });
});
