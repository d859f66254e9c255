import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, TeamtrError } from '../../util/errors.js';
import type { SwapRecord } from '../records.js';
import { scheduleSwap, type SwapRequest } from '../schedule-swap.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { directorySnapshot, readRecords } from '../test-support/run-files.js';
import { createSwapModels } from '../test-support/swap-models.js';
import { train } from '../trainer.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

async function fixtureWithSwapModels() {
  const fixture = await createTrainingFixture();
  cleanup.push(fixture.directory);
  return { ...fixture, models: await createSwapModels(fixture.directory) };
}

/** A run of the fixture interrupted after stage 2 (budget: 4 stages), so it can be resumed. */
async function interruptedRun(directory: string, config: object): Promise<string> {
  const runDirectory = path.join(directory, 'run');
  const controller = new AbortController();
  await train({
    config,
    runDirectory,
    signal: controller.signal,
    onProgress: (event) => {
      if (event.kind === 'stage' && event.stage === 2) controller.abort();
    },
  });
  return runDirectory;
}

describe('scheduling swaps', () => {
  test('bad swaps are refused with a clear error and the run directory is left byte for byte as it was', async () => {
    const { directory, config, models } = await fixtureWithSwapModels();
    const runDirectory = await interruptedRun(directory, config);
    const untouched = directorySnapshot(runDirectory);
    const refused: Array<[Omit<SwapRequest, 'runDirectory'>, RegExp]> = [
      [
        { agent: 'agent2', model: path.join(directory, 'no-such-model') },
        /swaps\[0\]\.model: model ".*no-such-model" not found/,
      ],
      [
        { agent: 'agent2', model: models.noLetters },
        /swaps\[0\]\.model: the tokenizer of .* cannot encode "a", "b", which the task/,
      ],
      [
        { agent: 'agent2', model: models.shortContext },
        /swaps\[0\]\.model: .* has maxPositions 6 but the role needs about \d+/,
      ],
      [
        { agent: 'agent2', model: models.otherAlphabet, alignment: { steps: 5, mode: 'kl' } },
        /swaps\[0\]\.alignment\.mode: "kl" needs the incoming model to use the outgoing agent's tokenizer.*use "sft"/,
      ],
      [
        { agent: 'nobody', model: models.wide },
        /swaps\[0\]\.agent: "nobody" is not an agent of this run \(agents: agent0, agent1, agent2\)/,
      ],
      [
        { agent: 'agent2', model: models.wide, alignment: { mode: 'rl' } },
        /alignment\.mode: got "rl" \(valid: "sft", "kl", "sft\+kl"\)/,
      ],
    ];
    for (const [request, message] of refused) {
      await assert.rejects(
        scheduleSwap({ runDirectory, ...request }),
        (error: unknown) => error instanceof ConfigError && message.test(error.message),
        `${JSON.stringify(request)} should fail with ${message}`,
      );
      assert.deepEqual(directorySnapshot(runDirectory), untouched);
    }
    // A swap added by hand to config.json (here one at or before the checkpoint, never applied)
    // is refused on resume: the checkpoint's integrity record no longer vouches for the config.
    const configPath = path.join(runDirectory, 'config.json');
    const edited = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
    writeFileSync(
      configPath,
      JSON.stringify({ ...edited, swaps: [{ stage: 2, agent: 'agent2', model: models.wide }] }),
    );
    const beforeResume = directorySnapshot(runDirectory);
    await assert.rejects(
      train({ config: {}, runDirectory, resume: true }),
      /config\.json: the file does not match the checksum the run's checkpoint recorded/,
    );
    assert.deepEqual(directorySnapshot(runDirectory), beforeResume);
  });

  test('a fresh run with a bad swap is refused before its directory is created', async () => {
    const { directory, config, models } = await fixtureWithSwapModels();
    const cases: Array<[object, RegExp]> = [
      [
        { swaps: [{ stage: 2, agent: 'agent1', model: path.join(directory, 'missing') }] },
        /swaps\[0\]\.model: model .* not found/,
      ],
      [
        {
          swaps: [
            { stage: 2, agent: 'agent1', model: models.wide },
            { stage: 2, agent: 'agent1', model: models.wide },
          ],
        },
        /swaps\[1\]: agent "agent1" is already swapped at stage 2/,
      ],
      [
        { schedule: 'single', swaps: [{ stage: 2, agent: 'agent1', model: models.wide }] },
        /schedule "single" plays every role with one model/,
      ],
      [
        {
          agents: [
            { name: 'agent0', model: path.join(directory, 'agent0') },
            { name: 'agent1', model: path.join(directory, 'agent1'), trainable: false },
            { name: 'agent2', model: path.join(directory, 'agent2') },
          ],
          swaps: [{ stage: 2, agent: 'agent1', model: models.wide }],
        },
        /"agent1" is frozen/,
      ],
      [{ swaps: [{ stage: 0, agent: 'agent1', model: models.wide }] }, /swaps\[0\]\.stage/],
    ];
    for (const [overrides, message] of cases) {
      const runDirectory = path.join(directory, 'never');
      await assert.rejects(train({ config: { ...config, ...overrides }, runDirectory }), message);
      assert.equal(existsSync(runDirectory), false);
    }
  });

  test('a scheduled swap is written into config.json and applied by the next resume', async () => {
    const { directory, config, models } = await fixtureWithSwapModels();
    const runDirectory = await interruptedRun(directory, config);
    const scheduled = await scheduleSwap({
      runDirectory,
      agent: 'agent2',
      model: path.relative(process.cwd(), models.otherAlphabet),
      alignment: { steps: 2 },
    });
    assert.equal(scheduled.checkpointStage, 2);
    assert.deepEqual(
      {
        stage: scheduled.swap.stage,
        model: scheduled.swap.model,
        steps: scheduled.swap.alignment.steps,
      },
      { stage: 3, model: models.otherAlphabet, steps: 2 },
    );
    const written = JSON.parse(readFileSync(path.join(runDirectory, 'config.json'), 'utf8')) as {
      swaps: unknown[];
    };
    assert.deepEqual(written.swaps, [scheduled.swap]);
    await assert.rejects(
      scheduleSwap({ runDirectory, agent: 'agent2', model: models.wide }),
      /already swapped at stage 3/,
    );
    const summary = await train({ config: {}, runDirectory, resume: true });
    assert.equal(summary.stages, 4);
    const swaps = readRecords(runDirectory).filter(
      (record): record is SwapRecord => record.type === 'swap',
    );
    assert.deepEqual(
      swaps.map((record) => [record.stage, record.agent, record.toModel, record.alignmentSteps]),
      [[3, 'agent2', models.otherAlphabet, 2]],
    );
    // Spent budget: a swap would never run.
    await assert.rejects(
      scheduleSwap({ runDirectory, agent: 'agent1', model: models.wide }),
      (error: unknown) =>
        error instanceof TeamtrError && /has spent its budget/.test(error.message),
    );
  });
});
