import { execFileSync } from 'node:child_process';
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { writeFileAtomic } from '../../io/atomic.js';
import type { ScalingTable } from '../../experiments/scaling-report.js';

/**
 * The scaling grid's result file (docs/results/<name>.json, format teamtr-result/1): the
 * tables with their takeaways, the command that reproduces them, the host and the commit.
 * It writes the shape src/report/result-file.ts validates; where that module is present, its
 * writeResultFile and currentHost take this file's place.
 */

const kernelFeatures = [
  'avx',
  'avx2',
  'fma',
  'avx512f',
  'avx512bw',
  'avx512_vnni',
  'avx512_bf16',
  'amx_bf16',
  'asimd',
];

function host(quiet: boolean) {
  let text = '';
  try {
    text = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    // not Linux: the model name from os.cpus(), no feature list
  }
  const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(text)?.[1]?.trim();
  const cpu = field('model name') ?? os.cpus()[0]?.model ?? 'unknown CPU';
  const flags = (field('flags') ?? field('Features') ?? '').split(/\s+/);
  const features = kernelFeatures.filter((feature) => flags.includes(feature));
  const vendor = /intel/i.test(cpu) ? 'intel' : /amd/i.test(cpu) ? 'amd' : 'cpu';
  const simd = features.includes('avx512f')
    ? 'avx512'
    : features.includes('avx2')
      ? 'avx2'
      : 'portable';
  return {
    cpu,
    kind: [vendor, simd, ...(features.includes('avx512_bf16') ? ['bf16'] : [])].join('-'),
    features,
    cores: os.availableParallelism(),
    memoryGiB: Math.round((10 * os.totalmem()) / 2 ** 30) / 10,
    node: process.version,
    quiet,
  };
}

function commit(): string | null {
  const git = (args: string[]) =>
    execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const head = git(['rev-parse', 'HEAD']);
    return git(['status', '--porcelain', '--untracked-files=no']) ? `${head}-dirty` : head;
  } catch {
    return null;
  }
}

/** `word` as the shell reads it back. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command line that reproduces this invocation from the repository root: the command and
 * every option given on the command line, in the command's order.
 */
export function reproducingCommand(command: Command): string {
  const words = ['node', 'bin/teamtr.js', command.name()];
  for (const option of command.options) {
    const key = option.attributeName();
    if (command.getOptionValueSource(key) !== 'cli' || !option.long) continue;
    const value: unknown = command.getOptionValue(key);
    words.push(option.long);
    if (value !== true) words.push(String(value));
  }
  return words.map(shellWord).join(' ');
}

export async function writeScalingResult(
  file: string,
  measured: {
    title: string;
    command: string;
    wallSeconds: number;
    tables: readonly ScalingTable[];
    notes: readonly string[];
    quietHost: boolean;
    data: unknown;
  },
): Promise<void> {
  const record = {
    format: 'teamtr-result/1',
    title: measured.title,
    command: measured.command,
    commit: commit(),
    measuredAt: new Date().toISOString(),
    host: host(measured.quietHost),
    wallSeconds: measured.wallSeconds,
    tables: measured.tables.map((table) => ({
      caption: `${table.title}: ${table.caption}`,
      columns: table.columns,
      rows: table.rows,
    })),
    notes: measured.notes,
    data: measured.data,
  };
  await writeFileAtomic(file, `${JSON.stringify(record, null, 2)}\n`);
}
