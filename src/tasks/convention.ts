import { z } from 'zod';
import { TeamtrError } from '../util/errors.js';
import {
  chainValues,
  codeNames,
  codesReading,
  decode,
  drawStart,
  encode,
  messageSymbols,
  step,
  stepSize,
  type CodeName,
} from './convention-codes.js';
import { checkDefaultProtocol, oneRoundProtocol, sortedUnique } from './protocol.js';
import { generatedSplitMethod } from './splits.js';
import { parseTaskOptions } from './task-options.js';
import type {
  BuiltInTask,
  CorruptionRequest,
  DemonstrationContext,
  Problem,
  RoleDefinition,
} from './types.js';
import { verifyExact } from './verifiers/exact.js';

/**
 * convention: a chain of agents passes a number along, each writing it in a code of its own
 * choosing that nobody announces — a coordination game whose best responses move when the
 * agents before change (docs/guides/tasks.md; the codes in convention-codes.ts).
 *
 *     prompt   107919     the start number; every agent adds 3 to every digit, modulo 10
 *     turn A   430242     107919 + 3, in plain digits (in the cipher: 38x535)
 *     turn B   498646     B reads A's message as plain (it holds a 0), adds 3 (763575) and
 *                         writes it in the cipher, which spells 7 as 4, 6 as 9, 3 as 8, …
 *     turn C   096808     the last agent reads B's message (only 2–9: both codes read it)
 *                         as the cipher, adds 3 and writes the answer in plain digits; had
 *                         it bet on plain it would have written 721979
 *
 * A message that holds a 0 or 1 (plain) or an x or y (cipher) shows its code; one of only 2–9
 * reads both ways, and then the reader must bet on the code its writer uses now. A base
 * agent reads an ambiguous message in the code it writes itself (its *convention*), so adjacent
 * agents must share a convention whenever the message between them is ambiguous: updating
 * one agent moves the code its neighbours should use. The first handoff is ambiguous in most
 * problems (`firstAmbiguity`), later ones less often (`ambiguity`), so a long chain is not
 * hopeless for an untrained team.
 *
 * The prompt does not depend on `agents`: teams of every size share problems (the answer is
 * the start after N steps) and per-role base models; role prompts say who answers (`A>`
 * passes the number on, `C=` writes the answer). Every agent's operation is the same
 * digit-wise step, a lookup a tiny model learns in a few hundred steps; a per-problem key
 * added digit by digit (two symbols to combine per digit) was not learned at the base models'
 * size in 4,000 steps.
 */

export const conventionMaxAgents = 8;

/**
 * Share of demonstrated turns that use the cipher: base models pretrained on them pick either
 * code about half the time, so their conventions are mixed and training must settle them.
 */
export const demonstratedCipherShare = 0.5;

export const conventionOptionsSchema = z.strictObject({
  name: z.literal('convention'),
  /** Agents in the chain, each one turn; the last writes the answer in plain digits. @default 3 */
  agents: z.number().int().min(2).max(conventionMaxAgents).default(3),
  /** Digits of the number passed along: a turn is this many symbols. @default 6 */
  digits: z.number().int().min(2).max(8).default(6),
  /** Probability that the first agent's message is ambiguous (reads both ways). @default 0.85 */
  firstAmbiguity: z.number().min(0).max(1).default(0.85),
  /** Probability that each later handoff is ambiguous. @default 0.2 */
  ambiguity: z.number().min(0).max(1).default(0.2),
  /** Share of all possible prompts reserved for eval. @default 0.2 */
  evalFraction: z.number().gt(0).lt(1).default(0.2),
});

/** Options of createConventionTask; every field has a default. */
export type ConventionOptions = Omit<z.input<typeof conventionOptionsSchema>, 'name'>;
type Shape = Pick<z.output<typeof conventionOptionsSchema>, 'agents' | 'digits'>;

interface Parsed {
  start: number[];
}

const letterOf = (agent: number) => String.fromCharCode(65 + agent);

function roles(agents: number): RoleDefinition[] {
  return Array.from({ length: agents }, (_, agent) => {
    const last = agent === agents - 1;
    return {
      name: `agent-${letterOf(agent)}`,
      prompt: `${letterOf(agent)}${last ? '=' : '>'}`,
      description: last
        ? `Reads the message before it, adds ${stepSize} to every digit, and writes the answer in plain digits.`
        : agent === 0
          ? `Adds ${stepSize} to every digit of the start number and writes the result in a code of its choice.`
          : `Reads the message before it, adds ${stepSize} to every digit, and writes the result in a code of its choice.`,
    };
  });
}

export function createConventionTask(taskOptions: ConventionOptions = {}): BuiltInTask {
  const name = 'convention';
  const options = parseTaskOptions(conventionOptionsSchema, name, taskOptions);
  const { agents, digits } = options;
  const rates = { first: options.firstAmbiguity, later: options.ambiguity };
  return {
    name,
    description:
      `A chain of ${agents} agents passing a ${digits}-digit number, each adding ${stepSize} to every digit and ` +
      'writing the result in plain digits or a cipher it chooses unannounced; the last answers in plain digits.',
    protocol: oneRoundProtocol(roles(agents), digits),
    alphabet: sortedUnique(`${messageSymbols} >=ABCDEFGH`),
    split: generatedSplitMethod(name, options.evalFraction, (random) => {
      const start = drawStart(random, digits, conventionMaxAgents - 1, rates);
      const values = chainValues(start, agents);
      return {
        prompt: encode(start, 'plain'),
        answer: encode(values.at(-1)!, 'plain'),
        metadata: { agents, digits, values: values.map((value) => encode(value, 'plain')) },
      };
    }),
    verify: (problem, finalText) => verifyExact(problem.answer, finalText),
    demonstrator: {
      demonstrate: (problem, context) => demonstrate(name, options, problem, context),
      corrupt: (request) => corrupt(name, options, request),
    },
  };
}

function parsePrompt(taskName: string, prompt: string, digits: number): Parsed {
  if (!new RegExp(`^\\d{${digits}}$`).test(prompt))
    throw new TeamtrError(
      `${taskName}: cannot read the prompt "${prompt}" (expected a start number of ${digits} digits)`,
    );
  return { start: [...prompt].map(Number) };
}

/**
 * The number the agent in `role` reads: the prompt's start for the first agent, else the
 * message before it, in the only code that reads it or, when both do, in `convention`. A
 * message no code reads is recomputed from the prompt, as a careful agent would.
 */
function incomingValue(
  parsed: Parsed,
  shape: Shape,
  role: number,
  previousTurns: readonly string[],
  convention: CodeName,
): number[] {
  if (role === 0) return parsed.start;
  const text = previousTurns[role - 1]!;
  const codes = codesReading(text, shape.digits);
  if (codes.length === 0) return chainValues(parsed.start, role).at(-1)!;
  return decode(text, codes.includes(convention) ? convention : codes[0]!, shape.digits)!;
}

/** The turn of an agent that reads an ambiguous message in `read` and writes in `write` (the last agent writes plain). */
function turnFor(
  parsed: Parsed,
  shape: Shape,
  role: number,
  previousTurns: readonly string[],
  codes: { read: CodeName; write: CodeName },
): string {
  const value = step(incomingValue(parsed, shape, role, previousTurns, codes.read));
  return encode(value, role === shape.agents - 1 ? 'plain' : codes.write);
}

/**
 * The code of the message before `role` as its writer meant it: the one that reads it, or,
 * for an ambiguous message, the one that reads the right number (plain when neither does).
 */
function codeInUse(parsed: Parsed, shape: Shape, role: number, previous: string): CodeName {
  const codes = codesReading(previous, shape.digits);
  if (codes.length === 1) return codes[0]!;
  const truth = encode(chainValues(parsed.start, role).at(-1)!, 'plain');
  return (
    codes.find((code) => encode(decode(previous, code, shape.digits)!, 'plain') === truth) ??
    'plain'
  );
}

/**
 * With `context.random` (pretraining), a base agent's turn: it picks either code, the cipher
 * with probability `demonstratedCipherShare`, reads an ambiguous message in it and writes in it.
 * Without (the ideal turn that eval's turn accuracy compares with), a coordinated agent's turn:
 * it keeps the code of the message before it (the first agent writes plain).
 */
function demonstrate(
  taskName: string,
  shape: Shape,
  problem: Problem,
  context: DemonstrationContext,
): string {
  const parsed = parsePrompt(taskName, problem.prompt, shape.digits);
  checkDefaultProtocol(taskName, context, shape.agents);
  const { role, previousTurns, random } = context;
  const convention: CodeName = random
    ? random.nextDouble() < demonstratedCipherShare
      ? 'cipher'
      : 'plain'
    : role === 0
      ? 'plain'
      : codeInUse(parsed, shape, role, previousTurns[role - 1]!);
  return turnFor(parsed, shape, role, previousTurns, { read: convention, write: convention });
}

/** A slip of one symbol, within the symbols the turn already uses (so its code stays readable). */
function corrupt(taskName: string, shape: Shape, request: CorruptionRequest): string {
  const { text, random } = request;
  parsePrompt(taskName, request.problem.prompt, shape.digits);
  checkDefaultProtocol(taskName, request, shape.agents);
  const symbols = /[xy]/.test(text) ? 'xy23456789' : /[01]/.test(text) ? '0123456789' : '23456789';
  const position = random.nextInt(text.length);
  const others = [...symbols].filter((symbol) => symbol !== text[position]);
  return (
    text.slice(0, position) + others[random.nextInt(others.length)]! + text.slice(position + 1)
  );
}

/** How one turn read the message before it and wrote its own (see turnConventions). */
export interface TurnConventions {
  /** Codes in which the agent could have read the message before it to write this turn. */
  reads: CodeName[];
  /** Codes in which it could have written it. */
  writes: CodeName[];
}

/**
 * For each turn of an episode, the codes it is consistent with: every (read, write) pair with
 * which an agent would have written exactly this turn given the turns before it. A wrong turn
 * has none; a turn after an unambiguous message can have been read either way, and the last
 * turn is written in plain digits. How a team's conventions are measured.
 */
export function turnConventions(
  problem: Problem,
  turns: readonly string[],
  options: ConventionOptions = {},
): TurnConventions[] {
  const shape = parseTaskOptions(conventionOptionsSchema, 'convention', options);
  const parsed = parsePrompt('convention', problem.prompt, shape.digits);
  if (turns.length > shape.agents)
    throw new TeamtrError(
      `convention: ${turns.length} turns for a team of ${shape.agents} agents (options.agents)`,
    );
  return turns.map((text, role) => {
    // The first agent reads the plain prompt; the last writes plain digits.
    const reads = role === 0 ? (['plain'] as const) : codeNames;
    const writes = role === shape.agents - 1 ? (['plain'] as const) : codeNames;
    const pairs = reads.flatMap((read) =>
      writes
        .filter(
          (write) => turnFor(parsed, shape, role, turns.slice(0, role), { read, write }) === text,
        )
        .map((write) => ({ read, write })),
    );
    const unique = (codes: CodeName[]) => codeNames.filter((code) => codes.includes(code));
    return {
      reads: unique(pairs.map((pair) => pair.read)),
      writes: unique(pairs.map((pair) => pair.write)),
    };
  });
}

/** How one agent of a convention team wrote and read over many episodes (conventionSummary). */
export interface AgentConventions {
  turns: number;
  /** Share of its turns that no (read, write) pair explains: a slip or garbage. */
  wrongShare: number;
  /** Share of its unambiguously written turns in the cipher; null for the last agent (plain). */
  cipherWriteShare: number | null;
  /** Turns after an ambiguous message (none for the first agent). */
  ambiguousReads: number;
  /** Share of those it read as the cipher (when its turn tells). */
  cipherReadShare: number | null;
  /** Share of those it read in the code its writer used: the handoff's coordination. */
  coordinatedShare: number | null;
}

const share = (part: number, whole: number) => (whole ? part / whole : null);

/**
 * Each agent's conventions over episodes of a team (turn texts in speaking order, one round):
 * what `teamtr eval` cannot show — which code each agent writes, how it bets on ambiguous
 * messages, and how often a handoff's reader bet on the code its writer used.
 */
export function conventionSummary(
  episodes: readonly { problem: Problem; turns: readonly string[] }[],
  options: ConventionOptions = {},
): AgentConventions[] {
  const { agents, digits } = parseTaskOptions(conventionOptionsSchema, 'convention', options);
  const tallies = Array.from({ length: agents }, () => ({
    turns: 0,
    wrong: 0,
    written: 0,
    cipherWrites: 0,
    ambiguousReads: 0,
    toldReads: 0,
    cipherReads: 0,
    judged: 0,
    coordinated: 0,
  }));
  for (const { problem, turns } of episodes) {
    const codes = turnConventions(problem, turns, options);
    codes.forEach((turn, role) => {
      const tally = tallies[role]!;
      tally.turns++;
      if (turn.writes.length === 0) tally.wrong++;
      if (turn.writes.length === 1 && role < agents - 1) {
        tally.written++;
        if (turn.writes[0] === 'cipher') tally.cipherWrites++;
      }
      if (role === 0 || codesReading(turns[role - 1]!, digits).length < 2) return;
      tally.ambiguousReads++;
      if (turn.reads.length !== 1) return;
      tally.toldReads++;
      if (turn.reads[0] === 'cipher') tally.cipherReads++;
      const writer = codes[role - 1]!.writes;
      if (writer.length !== 1) return;
      tally.judged++;
      if (writer[0] === turn.reads[0]) tally.coordinated++;
    });
  }
  return tallies.map((tally, role) => ({
    turns: tally.turns,
    wrongShare: share(tally.wrong, tally.turns) ?? 0,
    cipherWriteShare: role === agents - 1 ? null : share(tally.cipherWrites, tally.written),
    ambiguousReads: tally.ambiguousReads,
    cipherReadShare: share(tally.cipherReads, tally.toldReads),
    coordinatedShare: share(tally.coordinated, tally.judged),
  }));
}
