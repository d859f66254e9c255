/**
 * What the page reads from the dashboard's JSON API (src/dashboard/routes.ts). The figures are
 * the report's own model; the rest is stated here as the client uses it.
 */
import type { Figure } from '../../figures/figure.js';

export type { Figure, FigureSeries } from '../../figures/figure.js';

/** A row of GET /api/overview's `runs` (report/run-overview.ts RunOverview). */
export interface RunSummary {
  id: string;
  label: string;
  directory: string;
  schedule: string;
  seed: number | null;
  task: string;
  status: string;
  stages: number;
  updates: number;
  generatedTokens: number;
  budget: number | null;
  accuracyBefore: number | null;
  accuracyLast: number | null;
  rewardLast: number | null;
  meanKl: number | null;
  outOfRegionRate: number | null;
  cumulativeRankCorrelation: number | null;
  regressions: number;
  records: number;
}

/** One metrics.jsonl record, as far as the feed reads it. */
export interface MetricsRecord {
  type: string;
  stage?: number;
  generatedTokens?: number;
  agent?: string;
  batchRewardMean?: number | null;
  kl?: number | null;
  inRegion?: boolean;
  certificate?: number | null;
  rewardBefore?: number | null;
  rewardAfter?: number | null;
  regression?: boolean;
  accuracy?: number | null;
  count?: number;
  fromModel?: string;
  toModel?: string;
}

export interface FeedEntry {
  runId: string;
  run: string;
  record: MetricsRecord;
}

/** A row of the configuration table: one value per run, null where a run has none. */
export interface ConfigRow {
  key: string;
  values: (string | null)[];
  differs: boolean;
}

/** GET /api/overview. */
export interface Overview {
  runs: RunSummary[];
  runColors: Record<string, string>;
  figures: Figure[];
  config: ConfigRow[];
  offsets: Record<string, number>;
  recent: FeedEntry[];
  pollIntervalMs: number;
}

/** GET /api/runs/:id/metrics?since=offset. */
export interface MetricsChunk {
  records: MetricsRecord[];
  nextOffset: number;
  reset: boolean;
}

/** GET /api/runs. */
export interface RunStatus {
  status: string;
}

export function getJson<T>(url: string): Promise<T> {
  return fetch(url, { cache: 'no-store' }).then((response) => {
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return response.json() as Promise<T>;
  });
}
