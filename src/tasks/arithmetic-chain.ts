import { z } from 'zod';
import { TeamtrError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import {
  applyOperations,
  chainBound,
  drawOperand,
  drawOperations,
  formatOperations,
  parseInteger,
  parseOperations,
  type ChainLevel,
  type Operation,
  verifyChainAnswer,
} from './chain.js';
import { numericMistake } from './mistakes.js';
import { checkDefaultProtocol, oneRoundProtocol, sortedUnique } from './protocol.js';
import { generatedSplitMethod } from './splits.js';
import { leveledTaskOptionsSchema, parseTaskOptions } from './task-options.js';
import type { CorruptionRequest, DemonstrationContext, Problem, BuiltInTask } from './types.js';

/**
 * arithmetic-chain: one left-to-right chain cut into one segment per role.
 *
 *     prompt   7+5|-3|+8        segments "7+5", "-3", "+8" (3 roles)
 *     turn 0   12               role 0 evaluates its segment: 7+5
 *     turn 1   9                role 1 applies "-3" to the number in turn 0
 *     turn 2   17               role 2 applies "+8" to turn 1: the final answer
 *
 * Role r only sees its own segment and the previous turn, so the team answers correctly only if
 * every turn is right; a mistake upstream carries through. The last turn is the answer, verified
 * as a whole-text integer. Difficulty levels (operations per role, operand range, operators):
 *
 *     1: 1 op,  0–9,  +         2: 1 op,  0–9,  + −        3: 2 ops, 0–9, + −
 *     4: 2 ops, 0–99, + −       5: 2 ops, 0–99, + − × (× by 2–9, products ≤ 999)
 */

interface ArithmeticLevel extends ChainLevel {
  operationsPerRole: number;
}

const levels: readonly ArithmeticLevel[] = [
  { operationsPerRole: 1, maxOperand: 9, operators: ['+'], productCap: 0 },
  { operationsPerRole: 1, maxOperand: 9, operators: ['+', '-'], productCap: 0 },
  { operationsPerRole: 2, maxOperand: 9, operators: ['+', '-'], productCap: 0 },
  { operationsPerRole: 2, maxOperand: 99, operators: ['+', '-'], productCap: 0 },
  { operationsPerRole: 2, maxOperand: 99, operators: ['+', '-', '*'], productCap: 999 },
];

export const arithmeticChainOptionsSchema = leveledTaskOptionsSchema('arithmetic-chain', {
  levelCount: levels.length,
  minRoles: 1,
});

/**
 * Options of createArithmeticChainTask; every field has a default.
 * `roles`: the number of roles, one chain segment each (at least 1).
 */
export type ArithmeticChainOptions = Omit<z.input<typeof arithmeticChainOptionsSchema>, 'name'>;

export function createArithmeticChainTask(taskOptions: ArithmeticChainOptions = {}): BuiltInTask {
  const name = 'arithmetic-chain';
  const options = parseTaskOptions(arithmeticChainOptionsSchema, name, taskOptions);
  const level = levels[options.difficulty - 1]!;
  const roleCount = options.roles;

  return {
    name,
    description:
      `Evaluate a left-to-right integer chain cut into ${roleCount} segments; role r applies ` +
      `segment r to the previous turn's number (difficulty ${options.difficulty}).`,
    protocol: oneRoundProtocol(
      Array.from({ length: roleCount }, (_, role) => ({
        name: `segment-${role + 1}`,
        prompt: `seg${role + 1}`,
        description:
          role === 0
            ? 'Evaluates segment 1 of the prompt and writes the number.'
            : `Applies segment ${role + 1} of the prompt to the previous turn's number.`,
      })),
      String(chainBound(level, level.operationsPerRole * roleCount)).length,
    ),
    alphabet: sortedUnique('0123456789+-*|seg'),
    split: generatedSplitMethod(name, options.evalFraction, (random) =>
      generateProblem(random, level, roleCount, options.difficulty),
    ),
    verify: (problem, finalText) => verifyChainAnswer(problem.answer, finalText),
    demonstrator: {
      demonstrate: (problem, context) => demonstrate(name, problem, context),
      corrupt: (request) => corrupt(name, request),
    },
  };
}

function generateProblem(
  random: RandomGenerator,
  level: ArithmeticLevel,
  roleCount: number,
  difficulty: number,
) {
  const start = drawOperand(random, level);
  const operations = drawOperations(random, level, start, level.operationsPerRole * roleCount);
  const segments: string[] = [];
  for (let role = 0; role < roleCount; role++) {
    const segment = operations.slice(
      role * level.operationsPerRole,
      (role + 1) * level.operationsPerRole,
    );
    segments.push((role === 0 ? String(start) : '') + formatOperations(segment));
  }
  const partials = partialResults(segments);
  return {
    prompt: segments.join('|'),
    answer: String(partials.at(-1)),
    metadata: { difficulty, segments, partials },
  };
}

/** The segments of a prompt with their operations; segment 0 starts with a number. */
function parseSegments(prompt: string): { start: number; operations: Operation[][] } | null {
  const segments = prompt.split('|');
  const head = /^(\d+)(.*)$/.exec(segments[0]!);
  if (!head) return null;
  const operations = [head[2]!, ...segments.slice(1)].map(parseOperations);
  if (operations.some((segment) => segment === null)) return null;
  return { start: Number(head[1]), operations: operations as Operation[][] };
}

/** The correct number after each segment. */
function partialResults(segments: readonly string[]): number[] {
  const parsed = parseSegments(segments.join('|'))!;
  const partials: number[] = [];
  let value = parsed.start;
  for (const operations of parsed.operations) {
    value = applyOperations(value, operations);
    partials.push(value);
  }
  return partials;
}

function demonstrate(taskName: string, problem: Problem, context: DemonstrationContext): string {
  const parsed = parseSegments(problem.prompt);
  if (!parsed) throw new TeamtrError(`${taskName}: cannot read the prompt "${problem.prompt}"`);
  checkDefaultProtocol(taskName, context, parsed.operations.length);
  const { role, previousTurns } = context;
  if (role === 0) return String(applyOperations(parsed.start, parsed.operations[0]!));
  // An unreadable previous turn is recomputed from the prompt, as a careful agent would.
  const previous =
    parseInteger(previousTurns[role - 1]!) ?? partialResults(problem.prompt.split('|'))[role - 1]!;
  return String(applyOperations(previous, parsed.operations[role]!));
}

/** Skipping the segment (repeating the input number) or a numeric slip. */
function corrupt(taskName: string, request: CorruptionRequest): string {
  const { problem, role, previousTurns, text, random } = request;
  const parsed = parseSegments(problem.prompt);
  if (!parsed) throw new TeamtrError(`${taskName}: cannot read the prompt "${problem.prompt}"`);
  const value = parseInteger(text) ?? partialResults(problem.prompt.split('|'))[role]!;
  if (random.nextDouble() < 0.25) {
    const input = role === 0 ? String(parsed.start) : previousTurns[role - 1]!.trim();
    if (input !== text.trim() && parseInteger(input) !== null) return input;
  }
  return String(numericMistake(value, random));
}
