import { TeamtrError } from '../util/errors.js';
import type { Workload } from './context.js';
import { benchmarkBfloat16Decode } from './bfloat16.js';
import { smolLM2LoraDecode } from './lora-decode.js';
import {
  generation,
  loraStep,
  qwen25OnePointFiveB,
  smolLM2DecodeProducts,
  smolLM2Generation,
  smolLM2LoraStep,
  smolLM2Shape,
} from './real-model.js';
import { scoringAndExactKl } from './scoring-kl.js';
import { benchmarkTeamStage } from './team-stage.js';
import { benchmarkGenerate, benchmarkScore, benchmarkTrainStep } from './workloads.js';

/**
 * The workloads `teamtr bench --real-model` runs, in order, each in a process of its own
 * (child-process.ts) so its peak resident set is its own. A new workload is one entry here: a
 * name (also the prefix of its peak-RSS figure) and a function returning its figures.
 */
export const realModelWorkloads: Readonly<Record<string, Workload>> = {
  // The parameter count (millions) comes with the first workload.
  'smollm2-135m-shape-generate-batch1': smolLM2Generation(1, { parameterCount: true }),
  'smollm2-135m-shape-generate-batch8': smolLM2Generation(8),
  'smollm2-135m-shape-generate-batch64': smolLM2Generation(64, { timeSplits: true }),
  'smollm2-135m-shape-bfloat16-batch1': (context) =>
    benchmarkBfloat16Decode({ config: smolLM2Shape, name: 'smollm2-135m-shape', ...context }),
  // The stage's sampling: 16 rows on a bfloat16 base with LoRA adapters (about 25 s).
  'smollm2-135m-shape-bf16-lora-decode-batch16': smolLM2LoraDecode,
  'smollm2-decode-products': smolLM2DecodeProducts,
  'smollm2-135m-shape-score-exact-kl': scoringAndExactKl,
  'smollm2-135m-shape-lora-train-step': smolLM2LoraStep,
  // One TeamTR stage of three rank-8 LoRA agents on one bfloat16 base (team-stage.ts; about 5
  // minutes on a quiet 2-core machine). Its own peak-RSS figure is the runner's, in MiB.
  'smollm2-135m-shape-team-stage-4x4-bf16': async () =>
    (await benchmarkTeamStage({ weightsDtype: 'bfloat16' })).filter(
      (figure) => !figure.name.endsWith('-peak-rss'),
    ),
};

/**
 * The workloads of `teamtr bench --real-model --size 1.5b`: Qwen2.5-1.5B's shape with its frozen
 * weights in bfloat16 (real-model.ts), generation at batch 64, a LoRA step, and one TeamTR stage
 * of three LoRA agents on one shared bfloat16 base (about an hour on a quiet 2-core machine).
 */
export const qwenWorkloads: Readonly<Record<string, Workload>> = {
  'qwen2.5-1.5b-shape-generate-batch64': generation(qwen25OnePointFiveB, 64, {
    parameterCount: true,
  }),
  'qwen2.5-1.5b-shape-lora-train-step': loraStep(qwen25OnePointFiveB),
  'qwen2.5-1.5b-shape-team-stage-4x4-bf16': async () =>
    (await benchmarkTeamStage({ shape: qwen25OnePointFiveB, weightsDtype: 'bfloat16' })).filter(
      (figure) => !figure.name.endsWith('-peak-rss'),
    ),
};

/** The sizes `--real-model --size` takes, each with its workloads. */
const workloadsBySize: Readonly<Record<string, Readonly<Record<string, Workload>>>> = {
  '135m': realModelWorkloads,
  '1.5b': qwenWorkloads,
};

export const realModelSizes = Object.keys(workloadsBySize);

/** The real-model workloads of one size (a key of realModelSizes). */
export function realModelWorkloadsOf(size: string): Readonly<Record<string, Workload>> {
  const workloads = workloadsBySize[size];
  if (!workloads)
    throw new UnknownWorkloadError(
      `size ${size}`,
      realModelSizes.map((known) => `size ${known}`),
    );
  return workloads;
}

/**
 * The tiny-model workloads of plain `teamtr bench` (run in its own process), registered too so
 * that any of them can run alone in a child process: small enough for tests.
 */
export const tinyModelWorkloads: Readonly<Record<string, Workload>> = {
  'llama-3m-train-step': (context) => [benchmarkTrainStep(context)],
  'llama-3m-generate': (context) => [benchmarkGenerate(context)],
  'llama-3m-score': (context) => [benchmarkScore(context)],
};

/** A workload name that the registry does not hold; `known` lists the valid ones. */
export class UnknownWorkloadError extends TeamtrError {
  constructor(
    readonly workload: string,
    readonly known: readonly string[],
  ) {
    super(`unknown benchmark workload "${workload}" (known: ${known.join(', ')})`);
  }
}

/** The workload registered under `name`, real-model or tiny. */
export function findWorkload(name: string): Workload {
  const all: Record<string, Workload> = {
    ...realModelWorkloads,
    ...qwenWorkloads,
    ...tinyModelWorkloads,
  };
  const workload = Object.hasOwn(all, name) ? all[name] : undefined;
  if (!workload) throw new UnknownWorkloadError(name, Object.keys(all));
  return workload;
}
