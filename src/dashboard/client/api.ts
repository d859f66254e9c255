/**
 * What the page reads from the dashboard's JSON API (src/dashboard/routes.ts). The figures, the
 * run rows and the config rows are the server's own types; the rest is stated here as the
 * client uses it.
 */
import type { Figure } from '../../figures/figure.js';
import type { ConfigRow } from '../../report/config-table.js';
import type { RunOverview } from '../../report/run-overview-type.js';
import type { ResamplingDecisionView } from './describe.js';

export type { Figure, FigureSeries } from '../../figures/figure.js';
export type { ConfigRow } from '../../report/config-table.js';
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

/** One episode of transcripts.jsonl (src/trainer/outputs/transcripts.ts). */
export interface Transcript {
  stage: number;
  problem: { id: string; prompt: string; answer: string };
  sample: number;
  reward: number;
  correct: boolean;
  turns: Array<{ agent: string; text: string; tokens: number; ended: string; truncated?: true }>;
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
