import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { readJsonFile } from '../io/json-file.js';
import type { MetricsRecord } from '../trainer/records.js';
import { RunDirectory, runFiles } from '../trainer/run/run-directory.js';
import { isRunActive } from '../trainer/run/run-lock.js';
import type { TrainSummary } from '../trainer/summary.js';
import { FileFormatError, TeamtrError } from '../util/errors.js';
import { readMetricsSince } from './metrics-file.js';

/** One run as the report and the dashboard see it: what its files held when last read. */
export interface RunView {
  /** Position among the runs shown ("0", "1", …): what URLs and element ids use, never a path. */
  id: string;
  /** Short unique name for legends (the directory's name, with its parent's if ambiguous). */
  label: string;
  directory: string;
  config: Record<string, unknown> | null;
  /** summary.json, written when the run finished or was interrupted; null while it runs. */
  summary: TrainSummary | null;
  records: MetricsRecord[];
  /**
   * Whether a trainer process holds the run now (running.json names a live process); false
   * for a run without a summary means it crashed or was killed. Unknown when absent.
   */
  trainerActive?: boolean;
  /** Why the run cannot be read, when it is damaged (the dashboard lists it, reading nothing). */
  damage?: string;
}

export interface ResolveRunOptions {
  /**
   * Called with a run directory that is damaged (RunDirectory.open refuses it), which is then
   * kept in the list instead of stopping the whole command. Without it, the error is thrown.
   */
  onDamaged?: (directory: string, error: TeamtrError) => void;
}

/**
 * The run directories named on a command line. A directory that is not a run itself but holds
 * runs (what `teamtr compare --out` makes) stands for those runs, in name order.
 */
export async function resolveRunDirectories(
  paths: readonly string[],
  options: ResolveRunOptions = {},
): Promise<string[]> {
  const checked = async (directory: string): Promise<void> => {
    try {
      await RunDirectory.open(directory);
    } catch (error) {
      if (!(error instanceof TeamtrError) || !options.onDamaged) throw error;
      options.onDamaged(path.resolve(directory), error);
    }
  };
  if (paths.length === 0)
    throw new TeamtrError(
      'no run directory given; pass one or more directories `teamtr train` or `teamtr compare` wrote',
    );
  const resolved: string[] = [];
  for (const given of paths) {
    if (!existsSync(given))
      throw new TeamtrError(
        `run directory ${given} does not exist; pass a directory \`teamtr train\` or \`teamtr compare\` wrote`,
      );
    if (!statSync(given).isDirectory())
      throw new TeamtrError(`${given} is not a directory; pass a run directory`);
    if (existsSync(path.join(given, runFiles.marker))) {
      await checked(given);
      resolved.push(path.resolve(given));
      continue;
    }
    const children = readdirSync(given, { withFileTypes: true })
      .filter(
        (entry) => entry.isDirectory() && existsSync(path.join(given, entry.name, runFiles.marker)),
      )
      .map((entry) => entry.name)
      .sort();
    if (children.length === 0) {
      throw new FileFormatError(
        given,
        `not a teamtr run directory (no ${runFiles.marker}) and holds none; pass a directory \`teamtr train\` or \`teamtr compare\` wrote`,
      );
    }
    for (const child of children) {
      await checked(path.join(given, child));
      resolved.push(path.resolve(given, child));
    }
  }
  const seen = new Set<string>();
  return resolved.filter((directory) => {
    const real = realpathSync(directory);
    if (seen.has(real)) return false;
    seen.add(real);
    return true;
  });
}

/** Legend names: each directory's name, prefixed by as many parents as it takes to be unique. */
export function runLabels(directories: readonly string[]): string[] {
  const parts = directories.map((directory) =>
    path.resolve(directory).split(path.sep).filter(Boolean),
  );
  return parts.map((segments, index) => {
    for (let depth = 1; depth <= segments.length; depth++) {
      const label = segments.slice(-depth).join('/');
      const clashes = parts.some(
        (other, otherIndex) => otherIndex !== index && other.slice(-depth).join('/') === label,
      );
      if (!clashes) return label;
    }
    return `${segments.join('/')} #${index + 1}`;
  });
}

/** Reads a JSON file of a run that may not exist yet (null then). */
export async function readOptionalJson(filePath: string): Promise<unknown> {
  if (!existsSync(filePath)) return null;
  return readJsonFile(filePath);
}

export function asObject(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/** Reads every run once (for a report). */
export async function loadRuns(directories: readonly string[]): Promise<RunView[]> {
  const labels = runLabels(directories);
  return Promise.all(
    directories.map(async (directory, index) => ({
      id: String(index),
      label: labels[index]!,
      directory,
      config: asObject(await readOptionalJson(path.join(directory, runFiles.config))),
      summary: asObject(
        await readOptionalJson(path.join(directory, runFiles.summary)),
      ) as TrainSummary | null,
      records: (await readMetricsSince(path.join(directory, runFiles.metrics), 0)).records,
      trainerActive: isRunActive(directory),
    })),
  );
}

/** The run's schedule: from its config, else from its records. */
export function runSchedule(run: RunView): string {
  const fromConfig = run.config?.schedule;
  if (typeof fromConfig === 'string') return fromConfig;
  const record = run.records.find((entry) => entry.type === 'update' || entry.type === 'stage');
  return record && 'schedule' in record ? record.schedule : 'unknown';
}

export function runSeed(run: RunView): number | null {
  const seed = run.config?.seed;
  return typeof seed === 'number' ? seed : null;
}
