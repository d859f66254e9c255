import type { ErrorSlope, OccupancyGapRow, SurrogateErrorRow } from './scaling-analysis.js';
import type {
  CertificateCoverageRow,
  OccupancyRangeRow,
  ResamplingRow,
} from './scaling-diagnostics.js';
import type { CurvePoint, OutcomeRow, PairedRow, StaleFreshRatio } from './scaling-outcomes.js';

/** Everything the scaling experiment reports, as data (scaling.json) and as Markdown. */
export interface ScalingReport {
  /** The task the grid ran on (its config's task.name). */
  task: string;
  runs: number;
  /** The schedule every other is paired with. */
  baseline: string;
  paired: PairedRow[];
  outcomes: OutcomeRow[];
  occupancyGap: OccupancyGapRow[];
  occupancyRange: OccupancyRangeRow[];
  surrogateError: SurrogateErrorRow[];
  surrogateErrorSlopes: ErrorSlope[];
  staleFreshRatios: StaleFreshRatio[];
  certificateCoverage: CertificateCoverageRow[];
  resampling: ResamplingRow[];
  curves: { agents: number; schedule: string; points: CurvePoint[] }[];
}
