import { z } from 'zod';
import { TeamtrError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import { stringMistake } from './mistakes.js';
import { checkDefaultProtocol, oneRoundProtocol, sortedUnique } from './protocol.js';
import { generatedSplitMethod } from './splits.js';
import { leveledTaskOptionsSchema, parseTaskOptions } from './task-options.js';
import type { CorruptionRequest, DemonstrationContext, Problem, BuiltInTask } from './types.js';
import { verifyExact } from './verifiers/exact.js';

/**
 * string-pipeline: a word of letters goes through one stage per role.
 *
 *     prompt   rev|sort|uniq:cabad     stages rev, sort, uniq; input "cabad" (3 roles)
 *     turn 0   dabac                   role 0 applies stage 1 to the input
 *     turn 1   aabcd                   role 1 applies stage 2 to turn 0
 *     turn 2   abcd                    role 2 applies stage 3 to turn 1: the final answer
 *
 * Stages: rev (reverse), sort (alphabetical), uniq (drop letters seen before), rot (move the
 * first letter to the end), swap (exchange the first and last letters). The last turn is the
 * answer, verified by exact match after trimming. Difficulty levels (word length, letters,
 * stages):
 *
 *     1: 3–4, a–d, rev rot swap         2: 4–5, a–e, + sort        3: 4–6, a–f, + uniq
 *     4: 5–7, a–h, all                  5: 7–9, a–h, all
 */

const stages: Readonly<Record<string, (word: string) => string>> = {
  rev: (word) => [...word].reverse().join(''),
  sort: (word) => [...word].sort().join(''),
  uniq: (word) => [...new Set(word)].join(''),
  rot: (word) => word.slice(1) + word.slice(0, 1),
  swap: (word) => (word.length < 2 ? word : word.at(-1)! + word.slice(1, -1) + word[0]),
};

interface PipelineLevel {
  minLength: number;
  maxLength: number;
  letters: string;
  stageNames: readonly string[];
}

const levels: readonly PipelineLevel[] = [
  { minLength: 3, maxLength: 4, letters: 'abcd', stageNames: ['rev', 'rot', 'swap'] },
  { minLength: 4, maxLength: 5, letters: 'abcde', stageNames: ['rev', 'rot', 'swap', 'sort'] },
  {
    minLength: 4,
    maxLength: 6,
    letters: 'abcdef',
    stageNames: ['rev', 'rot', 'swap', 'sort', 'uniq'],
  },
  {
    minLength: 5,
    maxLength: 7,
    letters: 'abcdefgh',
    stageNames: ['rev', 'rot', 'swap', 'sort', 'uniq'],
  },
  {
    minLength: 7,
    maxLength: 9,
    letters: 'abcdefgh',
    stageNames: ['rev', 'rot', 'swap', 'sort', 'uniq'],
  },
];

export const stringPipelineOptionsSchema = leveledTaskOptionsSchema('string-pipeline', {
  levelCount: levels.length,
  minRoles: 1,
});

/**
 * Options of createStringPipelineTask; every field has a default.
 * `roles`: the number of roles, one stage each (at least 1).
 */
export type StringPipelineOptions = Omit<z.input<typeof stringPipelineOptionsSchema>, 'name'>;

export function createStringPipelineTask(taskOptions: StringPipelineOptions = {}): BuiltInTask {
  const name = 'string-pipeline';
  const options = parseTaskOptions(stringPipelineOptionsSchema, name, taskOptions);
  const level = levels[options.difficulty - 1]!;
  const roleCount = options.roles;

  return {
    name,
    description:
      `Apply ${roleCount} string stages (rev, sort, uniq, rot, swap) in turn; role r applies ` +
      `stage r to the previous turn's text (difficulty ${options.difficulty}).`,
    protocol: oneRoundProtocol(
      Array.from({ length: roleCount }, (_, role) => ({
        name: `stage-${role + 1}`,
        prompt: `step${role + 1}`,
        description:
          role === 0
            ? 'Applies stage 1 to the word after ":" and writes the result.'
            : `Applies stage ${role + 1} to the previous turn's text.`,
      })),
      level.maxLength,
    ),
    alphabet: sortedUnique(
      `|:0123456789step${Object.keys(stages).join('')}${levels.map((entry) => entry.letters).join('')}`,
    ),
    split: generatedSplitMethod(name, options.evalFraction, (random) =>
      generateProblem(random, level, roleCount, options.difficulty),
    ),
    verify: (problem, finalText) => verifyExact(problem.answer, finalText),
    demonstrator: {
      demonstrate: (problem, context) => demonstrate(name, problem, context),
      corrupt: (request) => corrupt(name, level, request),
    },
  };
}

function generateProblem(
  random: RandomGenerator,
  level: PipelineLevel,
  roleCount: number,
  difficulty: number,
) {
  const length = level.minLength + random.nextInt(level.maxLength - level.minLength + 1);
  let word = '';
  for (let index = 0; index < length; index++) {
    word += level.letters[random.nextInt(level.letters.length)];
  }
  const stageList = Array.from(
    { length: roleCount },
    () => level.stageNames[random.nextInt(level.stageNames.length)]!,
  );
  const outputs = runStages(stageList, word);
  return {
    prompt: `${stageList.join('|')}:${word}`,
    answer: outputs.at(-1)!,
    metadata: { difficulty, stages: stageList, input: word, outputs },
  };
}

function runStages(stageList: readonly string[], word: string): string[] {
  const outputs: string[] = [];
  let current = word;
  for (const stage of stageList) {
    current = stages[stage]!(current);
    outputs.push(current);
  }
  return outputs;
}

function parsePrompt(taskName: string, prompt: string): { stageList: string[]; word: string } {
  const match = /^([a-z|]+):([a-z]*)$/.exec(prompt);
  const stageList = match ? match[1]!.split('|') : [];
  if (!match || stageList.some((stage) => !Object.hasOwn(stages, stage))) {
    throw new TeamtrError(
      `${taskName}: cannot read the prompt "${prompt}" (expected stages from ` +
        `${Object.keys(stages).join(', ')} joined by "|", then ":" and a word)`,
    );
  }
  return { stageList, word: match[2]! };
}

/** Role r applies its stage to what the previous turn actually says (trimmed). */
function demonstrate(taskName: string, problem: Problem, context: DemonstrationContext): string {
  const { stageList, word } = parsePrompt(taskName, problem.prompt);
  checkDefaultProtocol(taskName, context, stageList.length);
  const input = context.role === 0 ? word : context.previousTurns[context.role - 1]!.trim();
  return stages[stageList[context.role]!]!(input);
}

/** Skipping the stage, applying the wrong stage, or a letter-level slip. */
function corrupt(taskName: string, level: PipelineLevel, request: CorruptionRequest): string {
  const { problem, role, previousTurns, text, random } = request;
  const { stageList, word } = parsePrompt(taskName, problem.prompt);
  const input = role === 0 ? word : (previousTurns[role - 1] ?? '').trim();
  const mode = random.nextDouble();
  if (mode < 0.2 && input !== text) return input;
  if (mode < 0.4) {
    const others = level.stageNames.filter((stage) => stage !== stageList[role]);
    const wrong = stages[others[random.nextInt(others.length)]!]!(input);
    if (wrong !== text) return wrong;
  }
  return stringMistake(text, level.letters, random);
}
