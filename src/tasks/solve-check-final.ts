import { z } from 'zod';
import { TeamtrError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
// The arithmetic of the chain tasks, shared with arithmetic-chain.
import * as chain from './chain.js';
import { numericMistake } from './mistakes.js';
import { checkDefaultProtocol, oneRoundProtocol, sortedUnique } from './protocol.js';
import { generatedSplitMethod } from './splits.js';
import { leveledTaskOptionsSchema, parseTaskOptions } from './task-options.js';
import type { CorruptionRequest, DemonstrationContext, Problem, BuiltInTask } from './types.js';

/**
 * solve-check-final: a solver proposes, checkers confirm or correct, a finalizer answers.
 *
 *     prompt   47+38
 *     turn 0   86          solver: its answer (here wrong)
 *     turn 1   85          checker: "ok" if the current proposal is right, else the right number
 *     turn 2   85          finalizer: the current proposal, i.e. the last number written
 *
 * With N roles, roles 1..N−2 are checkers and role N−1 the finalizer (N = 2: solver and
 * finalizer only). The finalizer's turn is the answer, verified as a whole-text integer. The
 * finalizer copies; it is right only if the solver was, or a checker caught the mistake. A
 * checker's "ok" on a wrong proposal, or a finalizer ignoring a correction, sinks the team.
 * Chains are evaluated left to right. Difficulty levels (operands, range, operators):
 *
 *     1: 2, 0–99 and 0–9, +     2: 2, 0–99 and 0–9, + −      3: 2, 0–99, + −
 *     4: 3, 0–99, + −       5: 3, 0–99, + − × (× by 2–9, products ≤ 999)
 */

interface CheckLevel extends chain.ChainLevel {
  operandCount: number;
  /** Range of the first operand; later operands use maxOperand. */
  maxFirstOperand: number;
}

const levels: readonly CheckLevel[] = [
  { operandCount: 2, maxFirstOperand: 99, maxOperand: 9, operators: ['+'], productCap: 0 },
  { operandCount: 2, maxFirstOperand: 99, maxOperand: 9, operators: ['+', '-'], productCap: 0 },
  { operandCount: 2, maxFirstOperand: 99, maxOperand: 99, operators: ['+', '-'], productCap: 0 },
  { operandCount: 3, maxFirstOperand: 99, maxOperand: 99, operators: ['+', '-'], productCap: 0 },
  {
    operandCount: 3,
    maxFirstOperand: 99,
    maxOperand: 99,
    operators: ['+', '-', '*'],
    productCap: 999,
  },
];

export const solveCheckFinalOptionsSchema = leveledTaskOptionsSchema('solve-check-final', {
  levelCount: levels.length,
  minRoles: 2,
});

/**
 * Options of createSolveCheckFinalTask; every field has a default.
 * `roles`: solver, checkers, finalizer (at least 2).
 */
export type SolveCheckFinalOptions = Omit<z.input<typeof solveCheckFinalOptionsSchema>, 'name'>;

const approval = 'ok';

export function createSolveCheckFinalTask(taskOptions: SolveCheckFinalOptions = {}): BuiltInTask {
  const name = 'solve-check-final';
  const options = parseTaskOptions(solveCheckFinalOptionsSchema, name, taskOptions);
  const level = levels[options.difficulty - 1]!;
  const roleCount = options.roles;

  const bound = chain.chainBound(level, level.operandCount - 1, level.maxFirstOperand);
  return {
    name,
    description:
      `Evaluate a short left-to-right integer chain: a solver proposes, ${roleCount - 2} ` +
      `checker(s) write "ok" or a correction, a finalizer writes the last proposal ` +
      `(difficulty ${options.difficulty}).`,
    protocol: oneRoundProtocol(
      Array.from({ length: roleCount }, (_, role) => roleDefinition(role, roleCount)),
      Math.max(String(bound).length, approval.length),
    ),
    alphabet: sortedUnique(`0123456789+-*${approval}solvecheckfinal`),
    split: generatedSplitMethod(name, options.evalFraction, (random) =>
      generateProblem(random, level, options.difficulty),
    ),
    verify: (problem, finalText) => chain.verifyChainAnswer(problem.answer, finalText),
    demonstrator: {
      demonstrate: (problem, context) => demonstrate(name, roleCount, problem, context),
      corrupt: (request) => corrupt(name, roleCount, request),
    },
  };
}

function generateProblem(random: RandomGenerator, level: CheckLevel, difficulty: number) {
  const start = chain.drawOperand(random, { ...level, maxOperand: level.maxFirstOperand });
  const operations = chain.drawOperations(random, level, start, level.operandCount - 1);
  return {
    prompt: `${start}${chain.formatOperations(operations)}`,
    answer: String(chain.applyOperations(start, operations)),
    metadata: { difficulty },
  };
}

function roleDefinition(role: number, roleCount: number) {
  if (role === 0) {
    return { name: 'solver', prompt: 'solve', description: 'Writes its answer to the prompt.' };
  }
  if (role === roleCount - 1) {
    return {
      name: 'finalizer',
      prompt: 'final',
      description: 'Writes the current proposal: the last number in the earlier turns.',
    };
  }
  return {
    name: roleCount > 3 ? `checker-${role}` : 'checker',
    prompt: 'check',
    description: `Writes "${approval}" if the current proposal is right, else the right number.`,
  };
}

function solve(taskName: string, prompt: string): number {
  const match = /^(\d+)(.*)$/.exec(prompt);
  const operations = match ? chain.parseOperations(match[2]!) : null;
  if (!match || !operations)
    throw new TeamtrError(`${taskName}: cannot read the prompt "${prompt}"`);
  return chain.applyOperations(Number(match[1]), operations);
}

/** The number in the latest turn that holds one ("ok" and unreadable turns are skipped). */
function currentProposal(previousTurns: readonly string[]): number | null {
  for (let index = previousTurns.length - 1; index >= 0; index--) {
    const value = chain.parseInteger(previousTurns[index]!);
    if (value !== null) return value;
  }
  return null;
}

function demonstrate(
  taskName: string,
  roleCount: number,
  problem: Problem,
  context: DemonstrationContext,
): string {
  checkDefaultProtocol(taskName, context, roleCount);
  const answer = solve(taskName, problem.prompt);
  if (context.role === 0) return String(answer);
  const proposal = currentProposal(context.previousTurns);
  if (context.role === roleCount - 1) return String(proposal ?? answer);
  return proposal === answer ? approval : String(answer);
}

/**
 * Solver: a numeric slip. Checker: approving a wrong proposal, or "correcting" with a wrong
 * number. Finalizer: copying the solver's first proposal instead of a correction, or a slip.
 */
function corrupt(taskName: string, roleCount: number, request: CorruptionRequest): string {
  const { problem, role, previousTurns, text, random } = request;
  const answer = solve(taskName, problem.prompt);
  const mode = random.nextDouble();
  const written = chain.parseInteger(text);
  if (role > 0 && role < roleCount - 1) {
    if (text.trim() !== approval && mode < 0.5) return approval;
    return String(numericMistake(written ?? answer, random));
  }
  if (role === roleCount - 1 && mode < 0.5 && role > 0) {
    const first = chain.parseInteger(previousTurns[0] ?? '');
    if (first !== null && first !== written) return String(first);
  }
  return String(numericMistake(written ?? answer, random));
}
