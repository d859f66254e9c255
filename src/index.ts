/**
 * teamtr's public API: what library users import, and what we keep stable. The applications in
 * this repository (CLI, server, dashboard, report) may also import the internal folders listed
 * for them in .dependency-cruiser.cjs, which `npm run lint` enforces.
 */
export { train, type TrainOptions, type TrainProgress } from './trainer/trainer.js';
export {
  trainConfigSchema,
  scheduleNames,
  objectiveNames,
  type TrainConfig,
  type TrainConfigInput,
  type AgentConfig,
} from './trainer/config/train-config.js';
export { openRun, type OpenedRun } from './trainer/open-run.js';
export { evaluateTeam, wilsonInterval, type Evaluation } from './trainer/evaluate.js';
export { buildTeam, defaultAgents, type BuiltTeam } from './trainer/setup/build-team.js';
export { schedules, type Schedule } from './trainer/schedules.js';
export { RunDirectory, runFiles } from './trainer/run/run-directory.js';
export { RunDirectoryError, type RunDirectoryRemedy } from './trainer/run/run-directory-error.js';
export type {
  MetricsRecord,
  UpdateRecord,
  StageRecord,
  EvaluationRecord,
  SwapRecord,
} from './trainer/records.js';
export type { TrainSummary, CertificateStatistics } from './trainer/summary.js';
export { pretrain, pretrainConfigSchema } from './pretrain/pretrain.js';
export { rollout, type RolloutOptions } from './team/rollout.js';
export {
  LocalPolicy,
  type AgentPolicy,
  type Completion,
  type CompletionRequest,
} from './team/policy.js';
export { renderAgentInput, renderSharedContext, speakerTagFor } from './team/render.js';
export type { Agent, Protocol, Team } from './team/team.js';
export type { TeamBatch, Trajectory, TurnRecord } from './team/types.js';
export * from './tasks/index.js';
export * as rl from './rl/index.js';
export { TransformerLM } from './nn/transformer.js';
export { generate, type GenerateOptions, type GeneratedSequence } from './nn/generate.js';
export {
  scoreCompletions,
  scoreToArrays,
  completionLogDistributions,
  type ScoringItem,
} from './nn/score.js';
export { modelConfigSchema, resolveModelConfig, type ModelConfig } from './nn/config.js';
export { loadModel, modelFormats, type LoadedModel, type ModelFormat } from './models/load.js';
export { AdamW } from './optim/adamw.js';
export { CharTokenizer } from './tokenizer/char.js';
export type { Tokenizer } from './tokenizer/types.js';
export { readSafetensors, writeSafetensors } from './io/safetensors.js';
export { saveCheckpoint, loadCheckpoint } from './io/checkpoint.js';
export { getBackend, setBackend, availableBackends } from './backend/index.js';
export { RandomGenerator } from './util/random.js';
export { TeamtrError, ConfigError, FileFormatError, ShapeError } from './util/errors.js';
export { certificateStatistics } from './trainer/summary.js';
export { scheduleSwap } from './trainer/schedule-swap.js';
// The applications the CLI runs, as functions: serve a team or model over an OpenAI-compatible
// API, the live dashboard, the static report, and export to a Hugging Face directory.
export { startServer, type ServerOptions, type RunningServer } from './serve/server.js';
export { modelEndpoint, type ServedModel, type ModelEndpointOptions } from './serve/endpoints.js';
export { teamEndpoint, type TeamEndpointOptions } from './serve/team-endpoint.js';
export { teamEndpoints, type TeamServingOptions } from './serve/run-endpoints.js';
export { startDashboard, type DashboardOptions, type DashboardServer } from './dashboard/server.js';
export {
  writeReport,
  type WriteReportOptions,
  type WriteReportResult,
} from './report/write-report.js';
export { exportHuggingFaceModel, type ExportOptions } from './models/huggingface/export.js';
