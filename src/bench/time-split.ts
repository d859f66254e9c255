import type { KernelBackend, KernelName } from '../backend/types.js';
import { memoryStatistics, timeZeroFilling } from '../tensor/index.js';

/**
 * Where a workload's wall time goes, measured while it runs: every kernel call timed through a
 * wrapper around the backend (products by the shape of their weights, attention, the rest by
 * kernel), the tensor layer's zero-filling timed where it happens (tensor/memory.ts), page
 * faults and system time from the OS, and the JavaScript between kernels as what is left of the
 * wall time. Timing a call costs two clock reads (~0.1 µs), under 1% of a stage.
 */

/** One line of a split: a part, its seconds, and what it did (multiply-adds, calls, bytes). */
export interface SplitPart {
  part: string;
  seconds: number;
  calls: number;
  /** Multiply-adds of the products in this part (0 for the others). */
  multiplyAdds: number;
  /**
   * CPU seconds of every thread of the process during this part's calls, when the split was
   * asked to read them (`cpu`): over `seconds`, the threads that took part (a kernel that
   * runs on the calling thread alone shows 1, whatever the pool's size). Workers waiting for a
   * task spin for a while and count as busy, so it is an upper bound.
   */
  cpuSeconds?: number;
}

export interface TimeSplit {
  wallSeconds: number;
  parts: SplitPart[];
  zeroFilledBytes: number;
  freshBytes: number;
  minorPageFaults: number;
  majorPageFaults: number;
  systemSeconds: number;
}

type Arguments = Record<string, unknown>;

const products = new Set<string>([
  'matmul',
  'matmulBfloat16',
  'matmulFixedOrder',
  'matmulGemmOrder',
]);

/**
 * A product's part: its kernel, the weight's shape (n × k: the same for every row count) and
 * whether it ran on few rows (≤ 16: decode steps) or many; its multiply-adds.
 */
function productPart(kernel: string, args: Arguments): { part: string; multiplyAdds: number } {
  const [m, n, k] = [args.m, args.n, args.k].map(Number) as [number, number, number];
  const batch = kernel === 'matmul' ? Number(args.batch) : 1;
  const rows = m <= 16 ? 'few rows' : 'many rows';
  const layout = args.transposeA ? 'Aᵀ' : args.transposeB ? 'Bᵀ' : 'B';
  return {
    part: `${kernel} ${n}×${k} ${layout}, ${rows}${batch > 1 ? `, batched` : ''}`,
    multiplyAdds: batch * m * n * k,
  };
}

/**
 * Attention's part: decode steps (one query a sequence, reading the key/value cache), the
 * forward of a gradient step (probabilities kept for the backward) or query blocks without
 * gradients (prefill, scoring); and its multiply-adds, scores and weighted values over the keys
 * each query sees (causal, padding counted: an upper bound on the work done).
 */
function attentionPart(args: Arguments): { part: string; multiplyAdds: number } {
  const [batch, heads, headDim, queries, start] = [
    args.batch,
    args.heads,
    args.headDim,
    args.queryLength,
    args.queryStart,
  ].map(Number) as [number, number, number, number, number];
  const visiblePairs = queries * start + (queries * (queries + 1)) / 2;
  const multiplyAdds = 2 * batch * heads * headDim * visiblePairs;
  const kind = args.probabilities
    ? 'with gradients'
    : queries === 1
      ? 'decode steps'
      : 'query blocks';
  return { part: `attention, ${kind}`, multiplyAdds };
}

/** A call's part and its multiply-adds (products and attention). */
function partOf(name: string, args: Arguments): { part: string; multiplyAdds: number } {
  if (products.has(name)) return productPart(name, args);
  if (name === 'attention') return attentionPart(args);
  return { part: name, multiplyAdds: 0 };
}

/** The process's CPU seconds so far (all threads, user and system). */
function processCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/**
 * A backend that times every call of `inner` into `parts`, and with `cpu` also the process's
 * CPU time around it (two getrusage calls, ~1 µs: for a split taken apart from the timed run).
 */
function timedBackend(
  inner: KernelBackend,
  parts: Map<string, SplitPart>,
  cpu: boolean,
): KernelBackend {
  const timed: Record<string, unknown> = {};
  for (const name of Object.keys(inner) as Array<KernelName | 'name' | 'description'>) {
    const kernel = inner[name];
    if (typeof kernel !== 'function') continue;
    const call = kernel.bind(inner) as (args: Arguments) => unknown;
    timed[name] = (args: Arguments) => {
      const cpuBefore = cpu ? processCpuSeconds() : 0;
      const started = performance.now();
      const result = call(args);
      const seconds = (performance.now() - started) / 1000;
      const cpuSeconds = cpu ? processCpuSeconds() - cpuBefore : 0;
      const { part, multiplyAdds } = partOf(name, args);
      const entry = parts.get(part) ?? { part, seconds: 0, calls: 0, multiplyAdds: 0 };
      entry.seconds += seconds;
      entry.calls += 1;
      entry.multiplyAdds += multiplyAdds;
      if (cpu) entry.cpuSeconds = (entry.cpuSeconds ?? 0) + cpuSeconds;
      parts.set(part, entry);
      return result;
    };
  }
  return {
    ...(timed as object),
    name: inner.name,
    get description() {
      return `${inner.description}, timed`;
    },
  } as KernelBackend;
}

/** A split being measured: the timed backend to install, and `finish` to stop and read it. */
export interface RunningTimeSplit {
  timed: KernelBackend;
  finish: () => TimeSplit;
}

/**
 * Starts measuring a time split around calls through the returned timed backend; the caller
 * installs it, runs, restores its own backend and calls `finish` (once, also on failure).
 * `cpu`: also each part's CPU seconds (`SplitPart.cpuSeconds`).
 */
export function startTimeSplit(
  backend: KernelBackend,
  options: { cpu?: boolean } = {},
): RunningTimeSplit {
  const parts = new Map<string, SplitPart>();
  const memoryBefore = memoryStatistics();
  const usageBefore = process.resourceUsage();
  timeZeroFilling(true);
  const started = performance.now();
  const finish = (): TimeSplit => {
    timeZeroFilling(false);
    const wallSeconds = (performance.now() - started) / 1000;
    const memory = memoryStatistics();
    const usage = process.resourceUsage();
    const zeroFill: SplitPart = {
      part: 'zero-filling (tensor allocateZeroed)',
      seconds: memory.zeroFillSeconds - memoryBefore.zeroFillSeconds,
      calls: 0,
      multiplyAdds: 0,
    };
    return {
      wallSeconds,
      parts: [...parts.values(), zeroFill].sort((left, right) => right.seconds - left.seconds),
      zeroFilledBytes: memory.zeroFilledBytes - memoryBefore.zeroFilledBytes,
      freshBytes: memory.freshBytes - memoryBefore.freshBytes,
      minorPageFaults: usage.minorPageFault - usageBefore.minorPageFault,
      majorPageFaults: usage.majorPageFault - usageBefore.majorPageFault,
      systemSeconds: (usage.systemCPUTime - usageBefore.systemCPUTime) / 1e6,
    };
  };
  return { timed: timedBackend(backend, parts, options.cpu ?? false), finish };
}

/**
 * Measures `run` (given the timed backend to install) and returns its time split. `run` must
 * restore the backend it replaces.
 */
export async function measureTimeSplit<T>(
  backend: KernelBackend,
  run: (timed: KernelBackend) => Promise<T>,
): Promise<{ result: T; split: TimeSplit }> {
  const running = startTimeSplit(backend);
  let result: T;
  try {
    result = await run(running.timed);
  } catch (error) {
    running.finish();
    throw error;
  }
  return { result, split: running.finish() };
}

/**
 * `measureTimeSplit` for a synchronous `run`, which installs and restores the timed backend
 * itself; `cpu` as in `startTimeSplit`.
 */
export function measureTimeSplitSync<T>(
  backend: KernelBackend,
  run: (timed: KernelBackend) => T,
  options: { cpu?: boolean } = {},
): { result: T; split: TimeSplit } {
  const running = startTimeSplit(backend, options);
  let result: T;
  try {
    result = run(running.timed);
  } catch (error) {
    running.finish();
    throw error;
  }
  return { result, split: running.finish() };
}

/**
 * What `total` measured beyond `part`, a run of its first steps alone (a generation of 32
 * tokens less one of 1: its decode steps): each part's seconds, calls, multiply-adds and CPU
 * seconds less `part`'s, and so the wall time, faults and bytes; a part whose calls all fell in
 * `part` is left out. On a busy machine a part may read a little below zero: kept at zero.
 */
export function splitDifference(total: TimeSplit, part: TimeSplit): TimeSplit {
  const before = new Map(part.parts.map((entry) => [entry.part, entry]));
  const less = (value: number, subtracted = 0) => Math.max(0, value - subtracted);
  const parts: SplitPart[] = [];
  for (const entry of total.parts) {
    const earlier = before.get(entry.part);
    const calls = entry.calls - (earlier?.calls ?? 0);
    if (entry.calls > 0 && calls <= 0) continue;
    const difference: SplitPart = {
      part: entry.part,
      seconds: less(entry.seconds, earlier?.seconds),
      calls,
      multiplyAdds: less(entry.multiplyAdds, earlier?.multiplyAdds),
    };
    if (entry.cpuSeconds !== undefined)
      difference.cpuSeconds = less(entry.cpuSeconds, earlier?.cpuSeconds);
    parts.push(difference);
  }
  return {
    wallSeconds: less(total.wallSeconds, part.wallSeconds),
    parts: parts.sort((left, right) => right.seconds - left.seconds),
    zeroFilledBytes: less(total.zeroFilledBytes, part.zeroFilledBytes),
    freshBytes: less(total.freshBytes, part.freshBytes),
    minorPageFaults: less(total.minorPageFaults, part.minorPageFaults),
    majorPageFaults: less(total.majorPageFaults, part.majorPageFaults),
    systemSeconds: less(total.systemSeconds, part.systemSeconds),
  };
}

/**
 * The split as lines: every part of at least `smallestShare` of the wall time (products at
 * their GFLOP/s), the smaller ones together, and the JavaScript between kernels (the wall time
 * no kernel or fill accounts for), then page faults and system time.
 */
export function splitLines(split: TimeSplit, smallestShare = 0.005): string[] {
  const accounted = split.parts.reduce((total, part) => total + part.seconds, 0);
  const percent = (seconds: number) => `${((100 * seconds) / split.wallSeconds).toFixed(1)}%`;
  const line = (part: SplitPart) => {
    const rate =
      part.multiplyAdds > 0
        ? `, ${((2 * part.multiplyAdds) / part.seconds / 1e9).toFixed(0)} GFLOP/s`
        : '';
    const threads =
      part.cpuSeconds !== undefined && part.seconds > 0
        ? `, ${(part.cpuSeconds / part.seconds).toFixed(1)} threads busy`
        : '';
    return `  ${part.part}: ${part.seconds.toFixed(2)} s (${percent(part.seconds)}), ${part.calls} calls${rate}${threads}`;
  };
  const largest = split.parts.filter((part) => part.seconds >= smallestShare * split.wallSeconds);
  const shown = largest.length;
  const rest = split.parts.slice(shown).reduce((total, part) => total + part.seconds, 0);
  const javascript = split.wallSeconds - accounted;
  return [
    ...largest.map(line),
    ...(rest > 0
      ? [`  ${split.parts.length - shown} other parts: ${rest.toFixed(2)} s (${percent(rest)})`]
      : []),
    `  JavaScript between kernels: ${javascript.toFixed(2)} s (${percent(javascript)})`,
    `  page faults: ${split.minorPageFaults} minor, ${split.majorPageFaults} major; system time ${split.systemSeconds.toFixed(2)} s; ` +
      `${(split.freshBytes / 2 ** 30).toFixed(2)} GiB of new buffers, ${(split.zeroFilledBytes / 2 ** 30).toFixed(2)} GiB zero-filled`,
  ];
}
