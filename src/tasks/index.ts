export type {
  BuiltInTask,
  CorruptionRequest,
  DemonstrationContext,
  Demonstrator,
  Problem,
  RoleDefinition,
  SplitName,
  SplitOptions,
  Task,
  TaskProtocol,
  VerifyDetails,
  VerifyResult,
} from './types.js';
export { getTask, taskNames, taskSpecSchema, type TaskName, type TaskSpec } from './registry.js';
export { loadJsonlTask, jsonlLoadOptionsSchema, type JsonlLoadOptions } from './jsonl.js';
export {
  sampleDemonstration,
  type Demonstration,
  type DemonstratedTurn,
  type DemonstrationOptions,
} from './demonstrations.js';
export { createArithmeticChainTask, type ArithmeticChainOptions } from './arithmetic-chain.js';
export { createStringPipelineTask, type StringPipelineOptions } from './string-pipeline.js';
export { createSolveCheckFinalTask, type SolveCheckFinalOptions } from './solve-check-final.js';
export {
  createWorkedChainTask,
  maxAgents as workedChainMaxAgents,
  type WorkedChainOptions,
} from './worked-chain.js';
export {
  createConventionTask,
  conventionMaxAgents,
  conventionSummary,
  turnConventions,
  type AgentConventions,
  type ConventionOptions,
  type TurnConventions,
} from './convention.js';
export { codeNames, type CodeName } from './convention-codes.js';
export { hashString, splitOf } from './splits.js';
export * from './verifiers/index.js';
export {
  defineTask,
  taskFingerprint,
  type TaskDefinition,
  type ProblemInput,
  type RewardValue,
} from './custom.js';
