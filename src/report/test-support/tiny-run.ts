import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pretrain } from '../../pretrain/pretrain.js';
import { train } from '../../trainer/trainer.js';

/**
 * A real run directory from a tiny training run (three 1-layer role models, a few stages), for
 * tests of what reads run directories. Built once per test process and removed at exit; the
 * models are too small to learn much, so many metrics are constant or null, as in a young run.
 */
export interface TinyRun {
  /** The run directory `train` wrote. */
  runDirectory: string;
  /** Scratch directory holding the run, its base models and anything a test adds. */
  scratchDirectory: string;
}

let cached: Promise<TinyRun> | null = null;

export function tinyRun(): Promise<TinyRun> {
  cached ??= buildTinyRun();
  return cached;
}

async function buildTinyRun(): Promise<TinyRun> {
  const scratchDirectory = mkdtempSync(path.join(tmpdir(), 'teamtr-tiny-run-'));
  process.once('exit', () => rmSync(scratchDirectory, { recursive: true, force: true }));
  const modelsDirectory = path.join(scratchDirectory, 'models');
  await pretrain(
    {
      task: { name: 'arithmetic-chain', difficulty: 1 },
      steps: 30,
      batchSize: 16,
      model: {
        architecture: 'llama',
        vocabSize: 100,
        hiddenSize: 32,
        layers: 1,
        heads: 2,
        intermediateSize: 64,
        maxPositions: 96,
        tieEmbeddings: true,
      },
    },
    modelsDirectory,
  );
  const runDirectory = path.join(scratchDirectory, 'teamtr-tiny');
  await train({
    config: {
      task: { name: 'arithmetic-chain', difficulty: 1 },
      agents: ['solver', 'checker', 'finisher'].map((name, role) => ({
        name,
        model: path.join(modelsDirectory, `role-${role}`),
      })),
      rollout: { problemsPerBatch: 4, groupSize: 4 },
      budget: { generatedTokens: 5000, maxStages: 3 },
      evaluation: { problems: 20, every: 1 },
      checkpointEvery: 1,
    },
    runDirectory,
  });
  return { runDirectory, scratchDirectory };
}
