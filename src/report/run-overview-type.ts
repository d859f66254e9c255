/**
 * A run's row in the runs table, as describeRun (run-overview.ts) builds it and the dashboard's
 * browser code reads it. Types only and no imports, so the browser code can share it.
 */
/** One row of the runs table: where a run stands, at a glance. */
export interface RunOverview {
  id: string;
  label: string;
  directory: string;
  schedule: string;
  seed: number | null;
  task: string;
  /**
   * finished / interrupted from summary.json; without one, running while a trainer process
   * holds the run, stopped when it crashed or was killed (resume it with --resume); damaged
   * when its files cannot be read (`damage` says why).
   */
  status: 'running' | 'finished' | 'interrupted' | 'stopped' | 'damaged';
  /** Why a damaged run cannot be read (null for every other run). */
  damage: string | null;
  stages: number;
  updates: number;
  generatedTokens: number;
  /** The config's generated-token budget, when known. */
  budget: number | null;
  accuracyBefore: number | null;
  accuracyLast: number | null;
  rewardLast: number | null;
  meanKl: number | null;
  outOfRegionRate: number | null;
  cumulativeRankCorrelation: number | null;
  regressions: number;
  /** Complete metrics records read so far. */
  records: number;
}
