import { z } from 'zod';
import { TeamtrError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import { numericMistake } from './mistakes.js';
import { checkDefaultProtocol, oneRoundProtocol, sortedUnique } from './protocol.js';
import { generatedSplitMethod } from './splits.js';
import { parseTaskOptions } from './task-options.js';
import type { BuiltInTask, CorruptionRequest, DemonstrationContext, Problem } from './types.js';
import { verifyNumeric } from './verifiers/numeric.js';

/**
 * worked-chain: long turns that continue each other's work. The long-turn task of the scaling
 * experiment (docs/method.md §9): every agent writes `steps` worked steps, about 6.5 characters
 * (tokens, for the built-in character models) each, alternately adding the prompt's two step
 * sizes, and starts from the last digit of the last number the agent before it wrote — so what
 * a later agent should write depends on the content of the earlier turns, slips included.
 *
 *     prompt   5 37                           start 5; steps alternate +3 and +7
 *     turn A   5+3=8 8+7=15 5+3=8 8+7=15 …     each step starts from the last digit before it
 *     turn B   5+3=8 8+7=15 …                  B starts from A's last result (15 → 5)
 *     ...      the answer is the last result of the last agent's turn
 *
 * Every agent reads the rule from the start of the prompt (a tiny model finds it there at any
 * context length) and the agents differ only in where they stand in the chain. The prompt does
 * not depend on `agents`: teams of every size share one set of problems (paired comparisons
 * across N) and one set of per-role base models (pretrained with `agents: 8`).
 */

export const maxAgents = 8;

export const workedChainOptionsSchema = z.strictObject({
  name: z.literal('worked-chain'),
  /** Agents in the team, each one turn, in order; the last one's final result is the answer. @default 3 */
  agents: z.number().int().min(1).max(maxAgents).default(3),
  /**
   * Worked steps per turn: the length knob, about 6.5 generated tokens a step (6 → ≈ 39
   * tokens, 9 → ≈ 59). @default 6
   */
  steps: z.number().int().min(1).max(10).default(6),
  /** Share of all possible prompts reserved for eval. @default 0.2 */
  evalFraction: z.number().gt(0).lt(1).default(0.2),
});

/** Options of createWorkedChainTask; every field has a default. */
export type WorkedChainOptions = Omit<z.input<typeof workedChainOptionsSchema>, 'name'>;

/** Steps alternate x → x + first and x → x + second; each starts from the last digit before. */
interface Rule {
  first: number;
  second: number;
}

const letterOf = (agent: number) => String.fromCharCode(65 + agent);

export function createWorkedChainTask(taskOptions: WorkedChainOptions = {}): BuiltInTask {
  const name = 'worked-chain';
  const options = parseTaskOptions(workedChainOptionsSchema, name, taskOptions);
  const { agents, steps } = options;
  return {
    name,
    description:
      `A chain of ${agents} agents, each writing ${steps} worked steps (alternately + a and + b) that continue ` +
      "from the last digit of the previous agent's result.",
    protocol: oneRoundProtocol(
      Array.from({ length: agents }, (_, agent) => ({
        name: `worker-${letterOf(agent)}`,
        prompt: letterOf(agent),
        description:
          agent === 0
            ? `Writes ${steps} worked steps from the prompt's start digit.`
            : `Writes ${steps} worked steps from the last digit of the previous turn's last result.`,
      })),
      // "x+b=vv" and a separating space per step.
      7 * steps,
    ),
    alphabet: sortedUnique('0123456789 +=ABCDEFGH'),
    split: generatedSplitMethod(name, options.evalFraction, (random) =>
      generateProblem(random, agents, steps),
    ),
    verify: (problem, finalText) =>
      verifyNumeric(problem.answer, finalText, {
        extract: 'last',
        absoluteTolerance: 0,
        relativeTolerance: 0,
      }),
    demonstrator: {
      demonstrate: (problem, context) => demonstrate(name, problem, context, agents, steps),
      corrupt: (request) => corrupt(name, request, agents, steps),
    },
  };
}

function generateProblem(random: RandomGenerator, agents: number, steps: number) {
  const start = random.nextInt(10);
  const rule: Rule = { first: 1 + random.nextInt(9), second: 1 + random.nextInt(9) };
  const prompt = `${start} ${rule.first}${rule.second}`;
  const results: number[] = [];
  let value = start;
  for (let agent = 0; agent < agents; agent++) {
    value = workedSteps(value % 10, rule, steps).at(-1)!;
    results.push(value);
  }
  return { prompt, answer: String(value), metadata: { agents, steps, results } };
}

/** The results of `steps` steps, each from the last digit of the one before. */
function workedSteps(start: number, rule: Rule, steps: number): number[] {
  const results: number[] = [];
  let digit = start;
  for (let step = 0; step < steps; step++) {
    const result = digit + offsetOf(rule, step);
    results.push(result);
    digit = result % 10;
  }
  return results;
}

const offsetOf = (rule: Rule, step: number) => (step % 2 === 0 ? rule.first : rule.second);

function formatSteps(start: number, rule: Rule, results: readonly number[]): string {
  let digit = start;
  return results
    .map((result, step) => {
      const text = `${digit}+${offsetOf(rule, step)}=${result}`;
      digit = result % 10;
      return text;
    })
    .join(' ');
}

function parsePrompt(taskName: string, prompt: string): { start: number; rule: Rule } {
  const match = /^(\d) ([1-9])([1-9])$/.exec(prompt);
  if (!match) throw new TeamtrError(`${taskName}: cannot read the prompt "${prompt}"`);
  return {
    start: Number(match[1]),
    rule: { first: Number(match[2]), second: Number(match[3]) },
  };
}

/** The last number a turn wrote, or null when it wrote none. */
function lastNumber(text: string): number | null {
  const numbers = text.match(/\d+/g);
  return numbers ? Number(numbers.at(-1)) : null;
}

/** The digit agent `agent` starts from: the prompt's for A, else the previous turn's last result's. */
function startDigit(
  parsed: { start: number; rule: Rule },
  context: DemonstrationContext,
  steps: number,
): number {
  if (context.role === 0) return parsed.start;
  const previous = lastNumber(context.previousTurns[context.role - 1]!);
  if (previous !== null) return previous % 10;
  // An unreadable previous turn: a careful agent recomputes the chain from the prompt.
  let digit = parsed.start;
  for (let agent = 0; agent < context.role; agent++) {
    digit = workedSteps(digit, parsed.rule, steps).at(-1)! % 10;
  }
  return digit;
}

function demonstrate(
  taskName: string,
  problem: Problem,
  context: DemonstrationContext,
  agents: number,
  steps: number,
): string {
  const parsed = parsePrompt(taskName, problem.prompt);
  checkDefaultProtocol(taskName, context, agents);
  const start = startDigit(parsed, context, steps);
  const { rule } = parsed;
  return formatSteps(start, rule, workedSteps(start, rule, steps));
}

/**
 * A slip in one step's result (a wrong sum), from which the later steps carry on
 * correctly: the mistake propagates through the turn and into the next agent's, as in a real
 * worked solution.
 */
function corrupt(
  taskName: string,
  request: CorruptionRequest,
  agents: number,
  steps: number,
): string {
  const { problem, random } = request;
  const parsed = parsePrompt(taskName, problem.prompt);
  checkDefaultProtocol(taskName, request, agents);
  const { rule } = parsed;
  const start = startDigit(parsed, request, steps);
  const results: number[] = [];
  const slipAt = random.nextInt(steps);
  let digit = start;
  for (let step = 0; step < steps; step++) {
    const exact = digit + offsetOf(rule, step);
    const result = step === slipAt ? numericMistake(exact, random) : exact;
    results.push(result);
    digit = result % 10;
  }
  const text = formatSteps(start, rule, results);
  return text === request.text
    ? formatSteps(start, rule, [...results.slice(0, -1), results.at(-1)! + 1])
    : text;
}
