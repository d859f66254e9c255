import { spawnSync } from 'node:child_process';
import os from 'node:os';
import type { HostInfo, KernelPathCount, NativeBuildInfo } from '../backend/native.js';
import type { SgemmBound } from './bound.js';
import type { BenchmarkResult } from './context.js';
import type { TimeSplit } from './time-split.js';

/**
 * A `teamtr bench` run as a result file (`--json FILE`, format teamtr-result/1: the shape every
 * measured result of the docs shares; docs/results.md is rendered from such files). It records
 * the host (CPU model, kind, features, cores, caches, the load around the run), the commit
 * measured, the command, and every figure.
 */

export interface BenchRun {
  command: string;
  /** The real model's shape timed (`--size`), or null without --real-model. */
  realModelSize?: string | null;
  /** The commit measured, read when the run started (currentCommit). */
  commit: string | null;
  host: HostInfo | null;
  build: NativeBuildInfo | null;
  backend: string;
  bound: SgemmBound;
  /** Every figure in the order printed. */
  results: readonly BenchmarkResult[];
  /** Kernel paths per workload. */
  paths: ReadonlyArray<{ workload: string; paths: readonly KernelPathCount[] }>;
  /** Time splits the workloads measured, by the figure they explain. */
  splits: ReadonlyArray<{ name: string; split: TimeSplit }>;
  wallSeconds: number;
  /** ISO time the run started. */
  startedAt: string;
  /** One-minute load averages before and after the run (other work on a shared machine). */
  load: { before: number; after: number };
}

/** The git commit of the checkout this package runs from (`-dirty` with changes), or null. */
export function currentCommit(): string | null {
  const git = (args: string[]) =>
    spawnSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const head = git(['rev-parse', 'HEAD']);
  if (head.status !== 0) return null;
  const dirty = git(['status', '--porcelain', '--untracked-files=no']).stdout.trim() !== '';
  return `${head.stdout.trim()}${dirty ? '-dirty' : ''}`;
}

/** Four significant digits; null (an empty cell) for a figure that is not finite. */
const rounded = (value: number): number | null =>
  Number.isFinite(value) ? Number(value.toPrecision(4)) : null;

function figureTables(results: readonly BenchmarkResult[]) {
  const fractions = new Map(
    results
      .filter((result) => result.name.endsWith('-of-sgemm4096'))
      .map((result) => [result.name.slice(0, -'-of-sgemm4096'.length), result.value]),
  );
  const ratios = new Map(
    results
      .filter((result) => result.name.startsWith('ratio-'))
      .map((result) => [result.name.slice('ratio-'.length), result.value]),
  );
  const torch = new Map(
    results
      .filter((result) => result.name.startsWith('torch-'))
      .map((result) => [result.name.slice('torch-'.length), result.value]),
  );
  const own = results.filter(
    (result) =>
      !result.name.endsWith('-of-sgemm4096') &&
      !result.name.startsWith('ratio-') &&
      !result.name.startsWith('torch-'),
  );
  return own.map((result) => [
    result.name,
    rounded(result.value),
    result.unit,
    fractions.has(result.name) ? rounded(fractions.get(result.name)!) : null,
    torch.has(result.name) ? rounded(torch.get(result.name)!) : null,
    ratios.has(result.name) ? rounded(ratios.get(result.name)!) : null,
  ]);
}

/** A time split as a table: its parts, then the JavaScript between kernels. */
function splitTable(name: string, split: TimeSplit) {
  const accounted = split.parts.reduce((total, part) => total + part.seconds, 0);
  const rate = (part: TimeSplit['parts'][number]) =>
    part.multiplyAdds > 0 ? rounded((2 * part.multiplyAdds) / part.seconds / 1e9) : null;
  return {
    caption: `Where the ${split.wallSeconds.toFixed(0)} s of ${name} went (${split.minorPageFaults} minor page faults, ${split.systemSeconds.toFixed(1)} s of system time).`,
    columns: ['part', 'seconds', 'share', 'calls', 'GFLOP/s'],
    rows: [
      ...split.parts.map((part) => [
        part.part,
        rounded(part.seconds),
        rounded(part.seconds / split.wallSeconds),
        part.calls,
        rate(part),
      ]),
      [
        'JavaScript between kernels',
        rounded(split.wallSeconds - accounted),
        rounded((split.wallSeconds - accounted) / split.wallSeconds),
        null,
        null,
      ],
    ],
  };
}

/** The host as a result file records it: the schema's fields, then caches, load and kernels. */
function hostRecord(run: BenchRun): Record<string, unknown> {
  const host = run.host;
  return {
    cpu: host?.model || os.cpus()[0]?.model || 'unknown CPU',
    kind: host?.kind ?? 'unknown',
    features: host?.features ?? [],
    cores: host?.cpus ?? os.availableParallelism(),
    memoryGiB: Math.round((10 * os.totalmem()) / 2 ** 30) / 10,
    node: process.version,
    quiet: run.load.before < 0.5 && run.load.after < 2.5,
    caches: host ? { l1dBytes: host.l1dBytes, l2Bytes: host.l2Bytes, l3Bytes: host.l3Bytes } : null,
    loadAverage: run.load,
    kernels: run.build
      ? {
          isa: run.build.isa,
          sgemm: run.build.sgemm,
          openblas: run.build.blasVersion,
          openblasCore: run.build.blasCore,
          threads: run.build.threads,
          tuning: run.build.tuning,
        }
      : { backend: run.backend },
  };
}

function boundTable(bound: SgemmBound) {
  const cell = (rate: number | null) => (rate === null ? null : rounded(rate));
  return {
    caption: `The machine's bound is the fastest sgemm of 4096×1024×1024 here: ${bound.fastest}'s, ${bound.bound.toFixed(1)} GFLOP/s.`,
    columns: ['sgemm 4096×1024×1024', 'GFLOP/s'],
    rows: [
      ['ours', cell(bound.own)],
      ['OpenBLAS through our addon', cell(bound.openblas)],
      ['PyTorch', cell(bound.torch)],
      ['bound (the fastest)', cell(bound.bound)],
    ],
  };
}

const notes = [
  'Throughputs are medians of timed runs after warm-ups, wall time, on the host stated; the machine may have been shared (host.loadAverage).',
  "Fractions of the bound: a workload's FLOPs (its weight products; attention and the rest uncounted, so a lower bound on the work done) over its seconds, divided by the fastest sgemm-4096 measured around it in its own process (ours and OpenBLAS's; PyTorch's as its ratio to them at the start of the run).",
  "PyTorch: Debian's python3-torch, its best of 1 and 2 threads, with OPENBLAS_CORETYPE set to the host's core type (Debian's OpenBLAS 0.3.21 falls back to its SSE3 kernels on CPUs newer than the release).",
];

/** The run as a teamtr-result/1 record. */
export function benchRecord(run: BenchRun): Record<string, unknown> {
  const kind = run.host?.kind ?? 'unknown';
  return {
    format: 'teamtr-result/1',
    title: `teamtr bench on ${kind}${run.realModelSize ? `, ${run.realModelSize} real-model shape` : ''}`,
    command: run.command,
    commit: run.commit,
    measuredAt: run.startedAt,
    host: hostRecord(run),
    wallSeconds: rounded(run.wallSeconds),
    tables: [
      boundTable(run.bound),
      {
        caption:
          'Every figure of the run; fractions are of the bound measured around the workload.',
        columns: ['figure', 'value', 'unit', 'fraction of bound', 'PyTorch', 'ratio to PyTorch'],
        rows: figureTables(run.results),
      },
      {
        caption:
          'The code each hot kernel ran, by workload: the multiply-adds and calls of each path.',
        columns: ['workload', 'kernel', 'path', 'multiply-adds', 'calls'],
        rows: run.paths.flatMap(({ workload, paths }) =>
          paths.map((taken) => [
            workload,
            taken.kernel,
            taken.path,
            taken.multiplyAdds,
            taken.calls,
          ]),
        ),
      },
      ...run.splits.map(({ name, split }) => splitTable(name, split)),
    ],
    notes,
    data: { results: run.results, bound: run.bound },
  };
}
