import type { RandomGenerator } from '../util/random.js';
import type { VerifyResult } from './types.js';
import { verifyNumeric } from './verifiers/numeric.js';

/**
 * Left-to-right integer chains ("7+5-3*2" means ((7+5)−3)·2, no precedence), shared by the
 * arithmetic tasks. Generated chains keep every intermediate value in [0, productCap]: a "−"
 * never takes more than the running value, a "*" is only drawn when the product stays under the
 * cap. Non-negative, short numbers are what tiny character-level models learn fastest.
 */

export type Operator = '+' | '-' | '*';

export interface Operation {
  operator: Operator;
  operand: number;
}

export interface ChainLevel {
  /** Operands are drawn from 0..maxOperand ("*" operands from 2..min(9, maxOperand)). */
  maxOperand: number;
  operators: readonly Operator[];
  /** A "*" is replaced by "+" when the product would exceed this. */
  productCap: number;
}

export function applyOperation(value: number, operation: Operation): number {
  if (operation.operator === '+') return value + operation.operand;
  if (operation.operator === '-') return value - operation.operand;
  return value * operation.operand;
}

export function applyOperations(value: number, operations: readonly Operation[]): number {
  return operations.reduce(applyOperation, value);
}

export function drawOperand(random: RandomGenerator, level: ChainLevel): number {
  return random.nextInt(level.maxOperand + 1);
}

/** Draws `count` operations starting from `start`, keeping every running value in range. */
export function drawOperations(
  random: RandomGenerator,
  level: ChainLevel,
  start: number,
  count: number,
): Operation[] {
  const operations: Operation[] = [];
  let value = start;
  for (let index = 0; index < count; index++) {
    let operator = level.operators[random.nextInt(level.operators.length)]!;
    if (operator === '-' && value === 0) operator = '+';
    let operand: number;
    if (operator === '*') {
      operand = 2 + random.nextInt(Math.min(9, Math.max(level.maxOperand, 2)) - 1);
      if (value * operand > level.productCap) {
        operator = '+';
        operand = drawOperand(random, level);
      }
    } else if (operator === '-') {
      operand = random.nextInt(Math.min(value, level.maxOperand) + 1);
    } else {
      operand = drawOperand(random, level);
    }
    const operation = { operator, operand };
    operations.push(operation);
    value = applyOperation(value, operation);
  }
  return operations;
}

export function formatOperations(operations: readonly Operation[]): string {
  return operations.map((operation) => `${operation.operator}${operation.operand}`).join('');
}

/** Reads "+3-2*4" back into operations; null if the text is anything else. */
export function parseOperations(text: string): Operation[] | null {
  if (!/^(?:[-+*]\d+)*$/.test(text)) return null;
  return [...text.matchAll(/([-+*])(\d+)/g)].map((match) => ({
    operator: match[1] as Operator,
    operand: Number(match[2]),
  }));
}

/** A turn's text read as an integer ("12", " -3 "), else null. */
export function parseInteger(text: string): number | null {
  const trimmed = text.trim();
  return /^-?\d+$/.test(trimmed) ? Number(trimmed) : null;
}

/** Largest value a chain of `operationCount` operations of this level can reach. */
export function chainBound(
  level: ChainLevel,
  operationCount: number,
  maxStart = level.maxOperand,
): number {
  const additive = maxStart + operationCount * level.maxOperand;
  const withProducts = level.operators.includes('*') ? level.productCap : 0;
  return Math.max(additive, withProducts + operationCount * level.maxOperand);
}

/** The answer turn must be exactly the integer (surrounding whitespace allowed). */
export function verifyChainAnswer(expected: string, text: string): VerifyResult {
  return verifyNumeric(expected, text, {
    extract: 'whole',
    absoluteTolerance: 0,
    relativeTolerance: 0,
  });
}
