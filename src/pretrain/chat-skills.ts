import { numericMistake, stringMistake } from '../tasks/mistakes.js';
import type { RandomGenerator } from '../util/random.js';

/**
 * The short text tasks the general chat model is pretrained on (chat.ts): each draws one chat
 * exchange, as a team member sees it — an instruction as the system message (sometimes none,
 * or inside the user message), the problem as the user message, other agents' turns as user
 * messages `name: text` — and the reply an ideal assistant writes. A mistake (off by one, a
 * swapped or dropped character) replaces the reply with probability `mistakeRate`, so the
 * model is competent but imperfect and training on a user's task has room to improve it.
 */

export interface ChatExchange {
  messages: { role: 'system' | 'user'; content: string }[];
  reply: string;
}

interface Problem {
  /** Instructions that ask for this, any of which may be the system message. */
  instructions: readonly string[];
  /** The problem (an arithmetic expression says what it asks; other skills need the instruction). */
  question: string;
  selfContained: boolean;
  answer: string;
  /** A plausible wrong answer. */
  mistake: (random: RandomGenerator) => string;
}

const pick = <T>(random: RandomGenerator, items: readonly T[]): T =>
  items[random.nextInt(items.length)]!;
const letters = 'abcdefghijklmnopqrstuvwxyz';
const word = (random: RandomGenerator, shortest = 3, longest = 7) =>
  Array.from(
    { length: shortest + random.nextInt(longest - shortest + 1) },
    () => letters[random.nextInt(letters.length)]!,
  ).join('');
const numberProblem = (
  instructions: readonly string[],
  question: string,
  answer: number,
): Problem => ({
  instructions,
  question,
  selfContained: /^[\d+*-]+$/.test(question),
  answer: String(answer),
  mistake: (random) => String(numericMistake(answer, random)),
});
const textProblem = (
  instructions: readonly string[],
  question: string,
  answer: string,
): Problem => ({
  instructions,
  question,
  selfContained: false,
  answer,
  mistake: (random) => stringMistake(answer, letters, random),
});

/**
 * Operands below 100, one digit a quarter of the time: a user's task asks about two-digit
 * numbers more often than one-digit ones (two numbers below 50 are 80% two-digit).
 */
const operand = (random: RandomGenerator) => random.nextInt(random.nextInt(4) === 0 ? 10 : 100);

/**
 * Sums (60%), differences (20%), products of one-digit numbers (10%), sums of three (10%):
 * adding two numbers is the skill a task in code most often leans on, and two-digit sums
 * written first digit first (a carry decides the first digit) take the tiny model the most
 * examples to learn.
 */
const arithmetic = (random: RandomGenerator): Problem => {
  const kind = random.nextInt(10);
  const [a, b] = [operand(random), operand(random)];
  if (kind < 6)
    return numberProblem(
      ['Add.', 'Add the numbers.', 'Sum.', 'Compute.', 'Calculate.', 'Solve.', 'What is the sum?'],
      `${a}+${b}`,
      a + b,
    );
  if (kind < 8) {
    const [large, small] = a >= b ? [a, b] : [b, a];
    return numberProblem(
      ['Subtract.', 'Compute.', 'Calculate.', 'Solve.', 'What is the difference?'],
      `${large}-${small}`,
      large - small,
    );
  }
  if (kind < 9) {
    const [x, y] = [random.nextInt(10), random.nextInt(10)];
    return numberProblem(['Multiply.', 'Compute.', 'Calculate.', 'Solve.'], `${x}*${y}`, x * y);
  }
  const c = random.nextInt(10);
  return numberProblem(['Compute.', 'Calculate.', 'Solve.'], `${a}+${b}+${c}`, a + b + c);
};

const textSkills: ((random: RandomGenerator) => Problem)[] = [
  (random) => {
    const text = word(random);
    return textProblem(['Repeat.', 'Copy.', 'Echo the text.', 'Say it again.'], text, text);
  },
  (random) => {
    const text = word(random);
    const reversed = [...text].reverse().join('');
    return textProblem(['Reverse.', 'Reverse the text.', 'Write it backwards.'], text, reversed);
  },
  (random) => {
    const text = word(random);
    return textProblem(['Uppercase.', 'Capitalize.', 'Shout.'], text, text.toUpperCase());
  },
  (random) => {
    const text = word(random);
    return textProblem(
      ['Sort.', 'Sort the letters.', 'Alphabetical order.'],
      text,
      [...text].sort().join(''),
    );
  },
  (random) => {
    const text = word(random, 1, 9);
    return numberProblem(
      ['Count.', 'Count the letters.', 'How many letters?', 'Length.'],
      text,
      text.length,
    );
  },
  (random) => {
    const numbers = Array.from({ length: 2 + random.nextInt(3) }, () => random.nextInt(100));
    const largest = random.nextInt(2) === 0;
    return numberProblem(
      largest
        ? ['Largest.', 'Max.', 'Which is largest?']
        : ['Smallest.', 'Min.', 'Which is smallest?'],
      numbers.join(' '),
      largest ? Math.max(...numbers) : Math.min(...numbers),
    );
  },
  (random) => {
    const [start, by] = [random.nextInt(50), 1 + random.nextInt(9)];
    return numberProblem(
      ['Continue.', 'Next number.', 'What comes next?'],
      [0, 1, 2].map((index) => start + index * by).join(' '),
      start + 3 * by,
    );
  },
];

/** Names other agents' turns carry (`solver: 12`), as teams name their agents. */
const agentNames = [
  'solver',
  'agent',
  'helper',
  'worker',
  'A',
  'B',
  'r0',
  'r1',
  'checker',
  'planner',
];

function askedAlone(random: RandomGenerator, problem: Problem, mistakeRate: number): ChatExchange {
  const instruction = pick(random, problem.instructions);
  const placement = random.nextInt(4);
  const messages: ChatExchange['messages'] =
    placement === 0
      ? [{ role: 'user', content: `${instruction} ${problem.question}` }]
      : [
          { role: 'system', content: placement === 1 ? `${instruction} ` : instruction },
          { role: 'user', content: problem.question },
        ];
  const reply = random.nextDouble() < mistakeRate ? problem.mistake(random) : problem.answer;
  return { messages, reply };
}

/**
 * A later member of a team: the problem, another agent's reply (wrong with probability
 * `mistakeRate`), and an instruction to give the answer (copy the other agent's) or to check it
 * (give the right one).
 */
function afterAnotherAgent(
  random: RandomGenerator,
  problem: Problem,
  mistakeRate: number,
): ChatExchange {
  const earlier = random.nextDouble() < mistakeRate ? problem.mistake(random) : problem.answer;
  // Without an instruction the reply is the other agent's answer; a checker corrects it.
  const instructed = random.nextInt(4) !== 0;
  const checking = instructed && random.nextInt(3) === 0;
  const instruction = checking
    ? pick(random, ['Check.', 'Check the answer.', 'Verify.', 'Correct it.'])
    : pick(random, [
        'Answer.',
        'Final answer.',
        'Give the answer.',
        'Finalize.',
        'Reply with the answer.',
      ]);
  const said = pick(random, [earlier, earlier, `The answer is ${earlier}.`, `${earlier}.`]);
  const messages: ChatExchange['messages'] = [
    ...(instructed ? [{ role: 'system' as const, content: `${instruction} ` }] : []),
    {
      role: 'user',
      content:
        problem.selfContained && random.nextInt(2) === 0
          ? problem.question
          : `${pick(random, problem.instructions)} ${problem.question}`,
    },
    { role: 'user', content: `${pick(random, agentNames)}: ${said}` },
  ];
  const intended = checking ? problem.answer : earlier;
  const reply = random.nextDouble() < mistakeRate ? problem.mistake(random) : intended;
  return { messages, reply };
}

/**
 * One pretraining exchange: a problem (three quarters arithmetic, a quarter another text
 * skill), asked alone three times in four, else after another agent's reply.
 */
export function sampleChatExchange(random: RandomGenerator, mistakeRate: number): ChatExchange {
  const problem = random.nextInt(4) < 3 ? arithmetic(random) : pick(random, textSkills)(random);
  return random.nextInt(4) === 0
    ? afterAnotherAgent(random, problem, mistakeRate)
    : askedAlone(random, problem, mistakeRate);
}
