/**
 * What the page reads from the dashboard's JSON API (src/dashboard/routes.ts). The figures, the
 * run rows, the config rows and the transcripts are the server's own types; the rest is stated
 * here as the client uses it.
 */
import type { Figure } from '../../figures/figure.js';
import type { ConfigRow } from '../../report/config-table.js';
import type { RunOverview } from '../../report/run-overview-type.js';
import type { Transcript } from '../../trainer/outputs/transcript-type.js';
import type { ResamplingDecisionView } from './describe.js';

export type { Figure, FigureSeries } from '../../figures/figure.js';
export type { ConfigRow } from '../../report/config-table.js';
export type { Transcript } from '../../trainer/outputs/transcript-type.js';
export type { RunOverview as RunSummary } from '../../report/run-overview-type.js';

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
  /** The lazy schedule's decision after an update (null or absent under the others). */
  resampling?: ResamplingDecisionView | null;
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

/** GET /api/overview. */
export interface Overview {
  runs: RunOverview[];
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

/** GET /api/runs/:id/transcripts?stage=s. */
export interface TranscriptsChunk {
  stages: number[];
  stage: number | null;
  transcripts: Transcript[];
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
