import assert from 'node:assert/strict';
import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { readSafetensors, writeSafetensors } from '../io/safetensors.js';
import { createTrainingFixture } from '../trainer/test-support/fixture.js';
import { resealCheckpoint, trainFirstStage } from '../trainer/test-support/run-files.js';
import { train } from '../trainer/trainer.js';
import { runCli } from './test-support/run-cli.js';

const cleanup: string[] = [];
after(() => cleanup.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

let directory: string;
/** A real run interrupted after its first stage. */
let trained: string;

before(async () => {
  const fixture = await createTrainingFixture();
  directory = fixture.directory;
  cleanup.push(directory);
  trained = path.join(directory, 'run');
  await trainFirstStage(
    { ...fixture.config, checkpointEvery: 1, budget: { generatedTokens: 100_000, maxStages: 2 } },
    trained,
  );
});

/**
 * A copy of the run whose agent1 weights were changed by `change` and recorded, as a diverged
 * run would have saved them (the integrity record vouches for them).
 */
async function runWithWeights(
  name: string,
  change: (tensors: Map<string, { data: Float32Array }>) => void,
): Promise<string> {
  const runDirectory = path.join(directory, name);
  cpSync(trained, runDirectory, { recursive: true });
  const file = path.join(runDirectory, 'checkpoint', 'units', 'agent1', 'model.safetensors');
  const { tensors } = await readSafetensors(file);
  change(tensors);
  await writeSafetensors(
    file,
    [...tensors].map(([tensorName, tensor]) => ({
      name: tensorName,
      shape: tensor.shape,
      data: tensor.data,
    })),
  );
  await resealCheckpoint(runDirectory);
  return runDirectory;
}

function assertRefused(result: { code: number; stderr: string }, message: RegExp): void {
  assert.equal(result.code, 2, result.stderr);
  assert.match(result.stderr, message);
  assert.doesNotMatch(result.stderr, /internal error|\n\s+at /);
}

describe('every command that reads a run’s weights refuses non-finite ones, naming the tensor', () => {
  test('NaN weights a diverged run saved: resume, eval, export and serve refuse them', async () => {
    const runDirectory = await runWithWeights('nan', (tensors) => {
      tensors.get('blocks.0.attention.queryProjection.weight')!.data[5] = Number.NaN;
    });
    const refusal =
      /checkpoint\/units\/agent1: weight "blocks\.0\.attention\.queryProjection\.weight" holds a non-finite value \(NaN at element 5\); the file is damaged or came from a diverged run/;
    await assert.rejects(train({ config: {}, runDirectory, resume: true }), refusal);
    assertRefused(await runCli(['train', '--resume', '--run-dir', runDirectory]), refusal);
    assertRefused(await runCli(['eval', runDirectory]), refusal);
    const out = path.join(directory, 'exported');
    assertRefused(
      await runCli(['export', runDirectory, '--agent', 'agent1', '--out', out]),
      refusal,
    );
    assert.equal(existsSync(out), false, 'nothing exported');
    assertRefused(await runCli(['serve', runDirectory, '--port', '0']), refusal);
    // `swap` loads the incoming model: one with NaN weights is refused, naming the tensor.
    const intact = path.join(directory, 'intact-for-swap');
    cpSync(trained, intact, { recursive: true });
    const nanModel = path.join(runDirectory, 'checkpoint', 'units', 'agent1');
    assertRefused(
      await runCli(['swap', intact, '--agent', 'agent1', '--model', nanModel]),
      refusal,
    );
  });

  test('finite weights whose forward pass overflows (a finalNorm of 3e38) are refused too', async () => {
    const runDirectory = await runWithWeights('overflow', (tensors) => {
      tensors.get('finalNorm.weight')!.data.fill(3e38);
    });
    assertRefused(
      await runCli(['eval', runDirectory]),
      /checkpoint\/units\/agent1: the model's forward pass overflows float32 on a 4-token probe .*"finalNorm\.weight" \(3\.\d+e\+38/,
    );
  });
});
