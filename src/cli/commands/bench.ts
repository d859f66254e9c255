import os from 'node:os';
import type { Command } from 'commander';
import { getBackend, setBackend } from '../../backend/index.js';
import { nativeBuildInfo, nativeHost, nativeKernelPaths } from '../../backend/native.js';
import { boundOf, measureOwnAndOpenblas, type SgemmBound } from '../../bench/bound.js';
import { runWorkloadInChild } from '../../bench/child-process.js';
import { formatBenchmarkResult, type BenchmarkResult } from '../../bench/context.js';
import { hostLines, kernelLines, pathLines } from '../../bench/host-report.js';
import { measureMemoryRead } from '../../bench/memory-bound.js';
import { realModelWorkloadsOf, realModelSizes } from '../../bench/registry.js';
import { benchRecord, currentCommit, type BenchRun } from '../../bench/result-record.js';
import { benchmarkSgemm } from '../../bench/timing.js';
import {
  hasTorch,
  pythonWithTorch,
  torchScript,
  torchSgemm,
  torchTinyReference,
} from '../../bench/torch-reference.js';
import { splitLines } from '../../bench/time-split.js';
import { TorchRealModelReference } from '../../bench/torch-real-model.js';
import { benchmarkGenerate, benchmarkScore, benchmarkTrainStep } from '../../bench/workloads.js';
import { writeResultFile, type ResultRecordInput } from '../../report/result-file.js';
import { ConfigError } from '../../util/errors.js';

const sgemmShapes: Array<[number, number, number]> = [
  [64, 256, 256],
  [512, 256, 1024],
  [2048, 512, 512],
  [4096, 1024, 1024],
];

/**
 * Timed runs (median) and untimed runs first of each real-model workload, here and in PyTorch
 * (at the 1.5b size, one timed run).
 */
const realModelRepeats = 3;
const realModelWarmup = 1;

interface BenchFlags {
  backend: string;
  repeats: string;
  torch: boolean;
  realModel?: boolean;
  size: string;
  json?: boolean | string;
}

/** How figures and notes leave the command: aligned text, or JSON lines (`--json` alone). */
class Output {
  readonly results: BenchmarkResult[] = [];
  readonly paths: BenchRun['paths'][number][] = [];
  readonly splits: BenchRun['splits'][number][] = [];

  constructor(private readonly jsonLines: boolean) {}

  emit(result: BenchmarkResult): void {
    this.results.push(result);
    const line = this.jsonLines ? JSON.stringify(result) : formatBenchmarkResult(result);
    process.stdout.write(`${line}\n`);
  }

  note(lines: readonly string[]): void {
    if (!this.jsonLines && lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
  }

  /** A workload's time splits, printed under its figures and kept for the result file. */
  recordSplits(splits: BenchRun['splits']): void {
    for (const { name, split } of splits) {
      this.splits.push({ name, split });
      this.note([`time split of ${name}:`, ...splitLines(split)]);
    }
  }

  /** A workload's kernel paths, printed under its figures and kept for the result file. */
  recordPaths(workload: string, paths: BenchRun['paths'][number]['paths']): void {
    this.paths.push({ workload, paths });
    this.note(paths.length > 0 ? [`paths of ${workload}:`, ...pathLines(paths)] : []);
  }
}

/**
 * The bound's three rates: ours and OpenBLAS's in this process and PyTorch's in its own,
 * alternating twice so a change of load hits all three (medians of each).
 */
function machineBound(withTorch: boolean): SgemmBound {
  const own: number[] = [];
  const openblas: number[] = [];
  const torch: number[] = [];
  for (let round = 0; round < 2; round++) {
    const rates = measureOwnAndOpenblas({ rounds: 1, minimumSeconds: 1 });
    own.push(rates.own);
    if (rates.openblas !== null) openblas.push(rates.openblas);
    if (withTorch) torch.push(torchSgemm());
  }
  const best = (values: number[]) => (values.length ? Math.max(...values) : null);
  return boundOf({ own: best(own)!, openblas: best(openblas), torch: best(torch) });
}

/** The sgemm bound measured for this run, and the memory read rate measured now. */
function emitBounds(output: Output, bound: SgemmBound): void {
  const name = 'sgemm-4096x1024x1024';
  output.emit({ name: `${name}-own`, value: bound.own, unit: 'GFLOP/s' });
  if (bound.openblas !== null)
    output.emit({ name: `${name}-openblas`, value: bound.openblas, unit: 'GFLOP/s' });
  if (bound.torch !== null)
    output.emit({ name: `${name}-pytorch`, value: bound.torch, unit: 'GFLOP/s' });
  output.emit({ name: `machine-bound-sgemm4096`, value: bound.bound, unit: 'GFLOP/s' });
  output.note([`(the bound: ${bound.fastest}'s sgemm, the fastest of the three)`]);
  const memoryRead = measureMemoryRead();
  if (memoryRead === null) return;
  output.emit({ name: 'memory-read', value: memoryRead.gigabytesPerSecond, unit: 'GB/s' });
  output.note([
    `(memory read: one pass over ${memoryRead.bytes / 2 ** 30} GiB on the kernel threads; work ` +
      'that reads its weights or caches once per step runs at most at bytes ÷ this rate)',
  ]);
}

/** The llama-3m workloads, in this process, each with the kernel paths it took. */
function tinyWorkloads(output: Output, repeats: number): void {
  const runs = [
    ['llama-3m-train-step', () => benchmarkTrainStep({ repeats, warmup: 3 })],
    // Steady-state sampling, as in a training loop that generates thousands of batches: the
    // same 3 warm-ups and repeats as the other workloads, here and in the PyTorch script.
    ['llama-3m-generate', () => benchmarkGenerate({ repeats, warmup: 3 })],
    ['llama-3m-score', () => benchmarkScore({ repeats, warmup: 3 })],
  ] as const;
  for (const [name, run] of runs) {
    nativeKernelPaths({ reset: true });
    output.emit(run());
    output.recordPaths(name, nativeKernelPaths() ?? []);
  }
}

/**
 * The --real-model workloads of one size, each in a process of its own, and PyTorch's run of
 * each right after ours, so that on a shared machine both are taken under about the same
 * load. Returns PyTorch's figures (for the ratios printed at the end).
 */
function realModelBench(
  output: Output,
  flags: BenchFlags,
  withTorch: boolean,
  bound: SgemmBound,
): BenchmarkResult[] {
  const ours = Math.max(bound.own, bound.openblas ?? 0);
  // At 1.5B a generation call takes minutes and a stage most of an hour on two cores: one
  // timed run, no warm-up (first-touch costs are small against minutes), and PyTorch once, at
  // two threads.
  const large = flags.size === '1.5b';
  const repeats = large ? 1 : realModelRepeats;
  const options = {
    repeats,
    warmup: large ? 0 : realModelWarmup,
    backend: flags.backend,
    torchSgemmRatio: bound.torch !== null ? bound.torch / ours : undefined,
  };
  const torch = withTorch
    ? new TorchRealModelReference({
        python: pythonWithTorch,
        script: torchScript('torch_real_model.py'),
        repeats,
        threads: large ? [2] : [1, 2],
      })
    : null;
  const reference: BenchmarkResult[] = [];
  for (const name of Object.keys(realModelWorkloadsOf(flags.size))) {
    const report = runWorkloadInChild(name, options);
    for (const result of report.results) output.emit(result);
    output.recordPaths(name, report.paths);
    output.recordSplits(report.splits);
    reference.push(...(torch?.run(name) ?? []));
  }
  return reference;
}

function emitRatios(output: Output, reference: Map<string, BenchmarkResult>): void {
  for (const ours of [...output.results]) {
    const theirs = reference.get(ours.name);
    if (!theirs) continue;
    output.emit({ name: `torch-${ours.name}`, value: theirs.value, unit: theirs.unit });
    output.emit({ name: `ratio-${ours.name}`, value: ours.value / theirs.value, unit: 'x' });
  }
}

async function bench(flags: BenchFlags): Promise<void> {
  if (!realModelSizes.includes(flags.size))
    throw new ConfigError(
      '--size',
      `unknown size "${flags.size}" (valid: ${realModelSizes.join(', ')})`,
    );
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const commit = currentCommit();
  const loadBefore = os.loadavg()[0]!;
  setBackend(flags.backend as 'auto');
  const backend = getBackend();
  const output = new Output(flags.json === true);
  const host = backend.name === 'native' ? nativeHost() : null;
  const build = backend.name === 'native' ? nativeBuildInfo() : null;
  output.note([
    `backend: ${backend.description}`,
    ...(host ? hostLines(host) : []),
    ...(build ? kernelLines(build) : []),
  ]);
  const repeats = Math.max(3, Number(flags.repeats) || 10);
  const withTorch = flags.torch && hasTorch();
  const bound = machineBound(withTorch);
  emitBounds(output, bound);
  for (const [m, n, k] of sgemmShapes)
    output.emit({
      name: `sgemm-${m}x${n}x${k}`,
      value: benchmarkSgemm(backend, { m, n, k, minimumSeconds: 1 }),
      unit: 'GFLOP/s',
    });
  // The llama-3m workloads and their PyTorch reference go with the 135m size (the default).
  const tiny = !flags.realModel || flags.size === '135m';
  if (tiny) tinyWorkloads(output, repeats);
  const realModelReference = flags.realModel ? realModelBench(output, flags, withTorch, bound) : [];
  const reference = withTorch ? (tiny ? torchTinyReference(repeats) : new Map()) : null;
  for (const result of realModelReference) reference?.set(result.name, result);
  if (reference) emitRatios(output, reference);
  else output.note(["(no PyTorch reference: install Debian's python3-torch for ratios)"]);
  if (typeof flags.json !== 'string') return;
  const run: BenchRun = {
    command: `node bin/teamtr.js ${process.argv.slice(2).join(' ')}`,
    realModelSize: flags.realModel ? flags.size : null,
    commit,
    startedAt,
    host,
    build,
    backend: backend.description,
    bound,
    results: output.results,
    paths: output.paths,
    splits: output.splits,
    wallSeconds: (performance.now() - started) / 1000,
    load: { before: loadBefore, after: os.loadavg()[0]! },
  };
  // Validated against the result-file schema as it is written.
  await writeResultFile(flags.json, benchRecord(run) as ResultRecordInput);
  process.stderr.write(`wrote ${flags.json}\n`);
}

export function register(program: Command): void {
  program
    .command('bench')
    .description(
      "measure the engine on this host: the host's kind and the kernels chosen for it, the machine's bound (the fastest sgemm-4096: ours, OpenBLAS's, PyTorch's), sgemm GFLOP/s and the llama-3m train/generate/score workloads, with PyTorch ratios when available",
    )
    .option('--backend <name>', 'kernel backend: auto, native or typescript', 'auto')
    .option(
      '--repeats <n>',
      'timed repetitions per llama-3m workload (after 3 warm-ups; the real-model ones take 3 after 1)',
      '10',
    )
    .option('--no-torch', 'skip the PyTorch reference')
    .option(
      '--real-model',
      "also time a random model of a real model's shape (--size), each workload in its own process with its peak RSS; at 135m (SmolLM2-135M): prefill, decode and whole generation at batch 1, 8 and 64, a decode step's products, scoring and the trust region's exact KL (16 × 128 tokens), a LoRA step (4 × 128 tokens), one TeamTR stage of three LoRA agents on a bfloat16 base (4 prompts × 4 trajectories, 64-token turns); at 1.5b (Qwen2.5-1.5B): generation at batch 64, a LoRA step and the stage. Each throughput also as a fraction of the machine's bound at its FLOPs, and the same workloads in PyTorch (src/bench/pytorch/torch_real_model.py; the stage has no PyTorch counterpart) for ratios",
    )
    .option('--size <size>', `the real model's shape: ${realModelSizes.join(' or ')}`, '135m')
    .option(
      '--json [file]',
      'with a file: also write the run as a result file (format teamtr-result/1: host, commit, command, every figure); alone: one JSON object per line {"name", "value", "unit"} instead of text',
    )
    .action(bench);
}
