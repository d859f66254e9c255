import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModel } from '../../../models/load.js';
import { applyLora } from '../../../nn/lora.js';
import { scoreToArrays } from '../../../nn/score.js';
import { AdamW, decayExempt } from '../../../optim/adamw.js';
import { LocalTinkerEngine } from '../../../serve/tinker/local-engine.js';
import { startTinkerService, type RunningTinkerService } from '../../../serve/tinker/server.js';
import { RandomGenerator } from '../../../util/random.js';
import { buildTeam } from '../../setup/build-team.js';
import { trainConfigSchema, type TrainConfigInput } from '../../config/train-config.js';
import type { MetricsRecord, UpdateRecord } from '../../records.js';
import { schedules } from '../../schedules.js';
import { Stage } from '../../stage.js';
import { resolveStageSettings } from '../../stage-settings.js';
import { resolveRunTask } from '../../setup/task-source.js';
import { createTrainingFixture } from '../../test-support/fixture.js';
import { collectUnitTokens } from '../token-grid.js';
import { train } from '../../trainer.js';
import { trustRegionUpdate } from '../trust-region.js';
import { isOnService } from '../engines.js';
import type { LocalUnit } from '../units.js';

/**
 * A 3-agent team in which agent2 trains on `teamtr serve --tinker`'s service over real HTTP on
 * 127.0.0.1, inside the same TeamTR stages as the two local agents.
 */
const apiKey = 'tml-local-secret-7f3a';
const lora = { rank: 2, seed: 7 };
let fixture: Awaited<ReturnType<typeof createTrainingFixture>>;
const services: RunningTinkerService[] = [];
const previousKey = process.env.TINKER_API_KEY;

before(async () => {
  fixture = await createTrainingFixture();
  process.env.TINKER_API_KEY = apiKey;
});
after(async () => {
  await Promise.all(services.map((service) => service.close()));
  rmSync(fixture.directory, { recursive: true, force: true });
  if (previousKey === undefined) delete process.env.TINKER_API_KEY;
  else process.env.TINKER_API_KEY = previousKey;
});

async function startService(stateDirectory: string, port = 0): Promise<RunningTinkerService> {
  const service = await startTinkerService({
    engine: new LocalTinkerEngine('agent2-base', path.join(fixture.directory, 'agent2'), {
      stateDirectory,
    }),
    port,
    pollWaitMs: 200,
  });
  services.push(service);
  return service;
}

/** The fixture's config with agent2 on the service at `baseURL`. */
function tinkerConfig(
  baseURL: string,
  overrides: Partial<TrainConfigInput> = {},
  learningRate?: number,
): TrainConfigInput {
  const agents = fixture.config.agents!.map((agent, index) =>
    index === 2
      ? {
          name: agent.name,
          rolePrompt: '',
          ...(learningRate ? { learningRate } : {}),
          engine: {
            tinker: {
              baseURL,
              baseModel: 'agent2-base',
              tokenizer: path.join(fixture.directory, 'agent2'),
              lora,
            },
          },
        }
      : agent,
  );
  return { ...fixture.config, agents, ...overrides };
}

function updates(runDirectory: string): UpdateRecord[] {
  return readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as MetricsRecord)
    .filter((record): record is UpdateRecord => record.type === 'update');
}

function comparable(runDirectory: string): unknown[] {
  return readFileSync(path.join(runDirectory, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => ({ ...(JSON.parse(line) as object), elapsedSeconds: undefined }));
}

function filesUnder(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const full = path.join(directory, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

describe('an agent trained on a Tinker service, in a TeamTR team', () => {
  test('its first update equals the same update done locally (same batch, same seed), to 1e-5 in log-prob', async () => {
    const service = await startService(path.join(fixture.directory, 'state-compare'));
    const config = trainConfigSchema.parse(
      tinkerConfig(service.url, {
        trustRegion: { delta: 1, epochs: 2, minibatches: 2 },
        optimizer: { learningRate: 3e-3 },
      }),
    );
    const task = await resolveRunTask(config, undefined);
    const built = await buildTeam(config, task, schedules.teamtr);
    const settings = resolveStageSettings(config);
    const plan = {
      stage: 1,
      seed: 'compare',
      problems: task.split('train', { seed: 3, count: config.rollout.problemsPerBatch }),
      heldOutProblems: [],
      tokensBefore: 0,
      updatesBefore: 0,
    };
    const stage = new Stage(plan, built.team, task, built.units, settings);
    const batch = await stage.sample();
    const unit = built.units.find(isOnService)!;
    assert.equal(unit.name, 'agent2');

    // The same LoRA model, built locally as the service builds it (rank 2, alpha 4, seed 7).
    const { model } = await loadModel(path.join(fixture.directory, 'agent2'));
    const present = new Set(model.namedParameters().map(({ name }) => name.split('.').at(-2)!));
    applyLora(model, {
      rank: lora.rank,
      alpha: 2 * lora.rank,
      targetModules: [
        'queryProjection',
        'keyProjection',
        'valueProjection',
        'outputProjection',
        'gateProjection',
        'upProjection',
        'downProjection',
      ].filter((name) => present.has(name)),
      random: new RandomGenerator(lora.seed),
    });
    const local: LocalUnit = {
      name: 'agent2',
      model,
      optimizer: new AdamW(model.trainableParameters(), {
        learningRate: unit.learningRate,
        beta1: config.optimizer.beta1,
        beta2: config.optimizer.beta2,
        epsilon: 1e-8,
        weightDecay: config.optimizer.weightDecay,
        noDecay: decayExempt,
      }),
      agentIndices: [2],
      delta: unit.delta,
      learningRate: unit.learningRate,
    };
    const tokens = collectUnitTokens(batch, [2]);
    const maxDifference = (a: ArrayLike<number>[], b: ArrayLike<number>[]) =>
      Math.max(
        ...a.flatMap((values, item) =>
          Array.from(values, (value, index) => Math.abs(value - b[item]![index]!)),
        ),
      );
    // The sampler's recorded log-probs are the local replica's: the batch is the replica's too.
    const recorded = tokens.items.map((_item, index) => {
      let cursor = 0;
      for (let before = 0; before < index; before++)
        cursor += tokens.items[before]!.completion.length;
      return Array.from(
        tokens.gridIndex.slice(cursor, cursor + tokens.items[index]!.completion.length),
        (grid) => tokens.oldLogProbs[grid]!,
      );
    });
    const localBefore = scoreToArrays(model, tokens.items).map((score) => score.logProbs);
    assert.ok(maxDifference(localBefore, recorded) < 1e-5, 'the replica is the service model');

    const update = await stage.measureUpdate(await stage.update(unit, batch));
    const estimate = settings.objective.advantages({
      rewards: batch.trajectories.map((trajectory) => trajectory.reward),
      problemIds: batch.trajectories.map((trajectory) => trajectory.problemIndex),
      agentActs: batch.trajectories.map(() => 1),
      settings: settings.objectiveSettings,
    });
    const localResult = await trustRegionUpdate(
      {
        unit: local,
        batch,
        advantages: estimate.advantages,
        trajectories: estimate.keptTrajectories,
        settings: settings.trustRegion,
      },
      new RandomGenerator(`${plan.seed}/updates`),
    );
    assert.equal(update.result.stepsTaken, 4);
    assert.equal(localResult.stepsTaken, 4);
    const remoteAfter = await unit.agent.completionLogProbs(tokens.items);
    const localAfter = scoreToArrays(model, tokens.items).map((score) => score.logProbs);
    const moved = maxDifference(localAfter, localBefore);
    const difference = maxDifference(remoteAfter, localAfter);
    assert.ok(moved > 1e-2, `the update moved the policy (${moved})`);
    // The local steps run a prompt their items share once (trainer/step-passes.ts), the
    // service's engine every item whole: the gradients differ in their last bits, and after four
    // Adam steps that move log-probs by 1.3 the two differ by 1.1e-6 (0 with plain local steps).
    assert.ok(
      difference <= 1e-5,
      `service vs local after the update: ${difference} (moved ${moved})`,
    );
    assert.ok(Math.abs(update.result.lossMean - localResult.lossMean) < 1e-5);
    // The k3 estimate of the KL against the exact KL of the same update.
    const record = stage.record(update, null);
    assert.equal(record.klEstimated, true);
    assert.ok(record.klStandardError! > 0);
    assert.ok(
      Math.abs(record.kl - localResult.kl) <= 4 * record.klStandardError!,
      `k3 ${record.kl} ± ${record.klStandardError} vs exact ${localResult.kl}`,
    );
    assert.deepEqual(record.probabilityShiftByRank, []);
    unit.agent.close();
    console.log(
      `# first update: service vs local max |Δ log-prob| ${difference.toExponential(2)} (update moved them by up to ${moved.toFixed(3)}); KL k3 ${record.kl.toFixed(5)} ± ${record.klStandardError!.toFixed(5)}, exact ${localResult.kl.toFixed(5)}`,
    );
  });

  test('trains in the team, undoes out-of-region steps, and resumes after the server restarts mid-run', async () => {
    const base = { checkpointEvery: 1, budget: { generatedTokens: 100_000, maxStages: 3 } };
    const tight = {
      trustRegion: { delta: 0.003, epochs: 3, minibatches: 2 },
      optimizer: { learningRate: 2e-4 },
    };
    const straightService = await startService(path.join(fixture.directory, 'state-straight'));
    const straight = path.join(fixture.directory, 'straight');
    await train({
      config: tinkerConfig(straightService.url, { ...base, ...tight }, 1e-2),
      runDirectory: straight,
    });
    const served = updates(straight).filter((update) => update.agent === 'agent2');
    assert.equal(served.length, 3);
    assert.ok(served.every((update) => update.klEstimated === true && update.inRegion));
    assert.ok(
      served.some((update) => update.stepsUndone > 0),
      'no service step was undone',
    );
    assert.ok(
      served.some((update) => update.stepsTaken > update.stepsUndone),
      'no step kept',
    );
    assert.ok(
      updates(straight)
        .filter((update) => update.agent !== 'agent2')
        .every((update) => update.klEstimated === undefined),
    );

    const stateDirectory = path.join(fixture.directory, 'state-restarted');
    const first = await startService(stateDirectory);
    const resumed = path.join(fixture.directory, 'resumed');
    const controller = new AbortController();
    const interrupted = await train({
      config: tinkerConfig(first.url, { ...base, ...tight }, 1e-2),
      runDirectory: resumed,
      signal: controller.signal,
      onProgress: (event) => {
        if (event.kind === 'stage' && event.stage === 2) controller.abort();
      },
    });
    assert.equal(interrupted.interrupted, true);
    await first.close();
    services.splice(services.indexOf(first), 1);
    // The server restarts (same port and state directory): the checkpoint's weight paths load.
    await startService(stateDirectory, first.port);
    const finished = await train({ config: {}, runDirectory: resumed, resume: true });
    assert.equal(finished.stages, 3);
    assert.deepEqual(comparable(resumed), comparable(straight));
    const checkpoint = JSON.parse(
      readFileSync(path.join(resumed, 'checkpoint', 'units', 'agent2', 'tinker.json'), 'utf8'),
    ) as { weightsPath: string };
    assert.match(checkpoint.weightsPath, /^tinker:\/\/local-model-.*\/weights\/agent2-/);
    for (const file of filesUnder(resumed))
      assert.ok(!readFileSync(file).includes(apiKey), `${file} holds the API key`);
  });

  test('bad settings and a missing key fail with errors naming the setting', async () => {
    assert.throws(
      () =>
        trainConfigSchema.parse({
          agents: [
            {
              name: 'a',
              model: 'builtin:x',
              engine: {
                tinker: {
                  baseURL: 'http://127.0.0.1:1',
                  baseModel: 'm',
                  tokenizer: 't',
                  lora: { rank: 2 },
                },
              },
            },
          ],
        }),
      /engine.tinker\) has its model there: drop/,
    );
    const service = await startService(path.join(fixture.directory, 'state-errors'));
    delete process.env.TINKER_API_KEY;
    try {
      await assert.rejects(
        train({
          config: tinkerConfig(service.url),
          runDirectory: path.join(fixture.directory, 'no-key'),
        }),
        /set the environment variable TINKER_API_KEY/,
      );
    } finally {
      process.env.TINKER_API_KEY = apiKey;
    }
    await assert.rejects(
      train({
        config: tinkerConfig(service.url, { trustRegion: { rollback: {} } }),
        runDirectory: path.join(fixture.directory, 'rollback'),
      }),
      /trustRegion\.rollback/,
    );
  });
});
