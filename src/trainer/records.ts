/**
 * The records a run writes to metrics.jsonl, one JSON object per line, discriminated by
 * `type`. Field names are the public contract read by the dashboard and reports; each record
 * type is defined beside the code that produces it.
 */
import type { UpdateRecord } from './update-record.js';
import type { EvaluationRecord, StageRecord } from './run-stage.js';
import type { SwapRecord, SwapRecoveryRecord } from './swap/swap.js';
import type { RollbackRecord } from './step-control/stage-rollback.js';

export type { RankShiftSummary, UpdateCertificate } from './certificate/certify.js';
export type { EvaluationFigures } from './evaluate.js';
export type { TrustRegionOutcome } from './update/trust-region.js';
export type { UpdateRecord, StageRecord, EvaluationRecord };
export type { SwapRecord, SwapRecoveryRecord, RollbackRecord };

export type MetricsRecord =
  UpdateRecord | StageRecord | EvaluationRecord | SwapRecord | SwapRecoveryRecord | RollbackRecord;
