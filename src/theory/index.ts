/**
 * The exact check of TeamTR's theory in tabular team games (docs/method.md §7): games, exact
 * quantities, trust-region steps, certificates, schedules, the scaling experiment and its
 * reports. Nothing here depends on the neural-network stack.
 */
export {
  gameFamilies,
  gameFamilyByName,
  gameFamilyNames,
  createGame,
  type GameFamily,
} from './families.js';
export {
  horizonOf,
  positionsOf,
  prefixCount,
  speakerAt,
  validateGameShape,
  type GameShape,
  type TabularGame,
} from './game.js';
export {
  randomTeamPolicy,
  tableFromLogits,
  withTables,
  type PositionTable,
  type TeamPolicy,
} from './policy.js';
export {
  analyzeTeam,
  computeAdvantages,
  computeOccupancy,
  computeValues,
  expectedReturnOf,
  perStateKl,
  policyAdvantage,
  tokenLevelKl,
  trueImprovementOf,
  type ExactAnalysis,
} from './exact.js';
export {
  trustRegionStep,
  type TrustRegionStep,
  type TrustRegionStepInput,
} from './trust-region.js';
export {
  computeCertificate,
  type CertificateInput,
  type UpdateCertificate,
} from './certificate.js';
export {
  freshSchedule,
  jointSchedule,
  stageSchedules,
  staleSchedule,
  turnOrder,
  type StageInput,
  type StageResult,
  type StageSchedule,
  type UpdateRecord,
} from './schedules.js';
export {
  resolveTheoryConfig,
  theoryConfigSchema,
  type TheoryConfig,
  type TheoryConfigInput,
} from './config.js';
export {
  runGame,
  runTheoryExperiment,
  type GameOutcome,
  type TheoryExperimentResult,
} from './experiment.js';
export { fitPowerLaw, type PowerLawFit } from './fit.js';
export { summarizeTheory, type TheorySummary } from './summary.js';
export { renderTheoryReport, renderTheoryTable } from './report.js';
export { buildScalingFigure } from './scaling-figure.js';
export { writeTheoryOutputs } from './output.js';
export { createSeededRandom, deriveSeed, type SeededRandom } from './random.js';
