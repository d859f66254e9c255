import { TeamtrError } from '../util/errors.js';
import type { RandomGenerator } from '../util/random.js';
import type { Problem, Task, VerifyResult } from './types.js';

/**
 * Synthetic episodes for pretraining base models: every turn of the default protocol written by
 * the task's demonstrator, some replaced by plausible mistakes. Later turns react to the earlier
 * turns as written (mistakes included), exactly as they would in a real episode.
 */

export interface DemonstratedTurn {
  role: number;
  text: string;
  /** True when `corrupt` replaced the ideal text. */
  corrupted: boolean;
}

export interface DemonstrationOptions {
  task: Task;
  problem: Problem;
  random: RandomGenerator;
  /**
   * Probability that a turn is replaced by a mistake: one number for every role, or one per role.
   * @default 0
   */
  mistakeRate?: number | readonly number[];
}

export interface Demonstration {
  turns: DemonstratedTurn[];
  /** Text of the protocol's answer turn. */
  finalText: string;
  result: VerifyResult;
}

/** One episode; draws one uniform number per turn, plus what `demonstrate` and `corrupt` draw. */
export function sampleDemonstration(options: DemonstrationOptions): Demonstration {
  const { task, problem, random } = options;
  const demonstrator = task.demonstrator;
  if (!demonstrator) {
    throw new TeamtrError(
      `task "${task.name}" has no demonstrator (datasets have reference answers, not ` +
        `per-role turns); pretrain on a built-in task instead`,
    );
  }
  const rates = mistakeRates(options.mistakeRate ?? 0, task.protocol.roles.length);
  const turns: DemonstratedTurn[] = [];
  const previousTurns: string[] = [];
  for (const role of task.protocol.turnOrder) {
    const context = { role, previousTurns: [...previousTurns], random };
    const ideal = demonstrator.demonstrate(problem, context);
    const corrupted = random.nextDouble() < rates[role]!;
    const text = corrupted
      ? demonstrator.corrupt({ ...context, problem, text: ideal, random })
      : ideal;
    turns.push({ role, text, corrupted });
    previousTurns.push(text);
  }
  const finalText = turns[task.protocol.answerTurn]!.text;
  const result = task.verify(problem, finalText);
  if (result instanceof Promise)
    throw new TeamtrError(
      `task "${task.name}" scores asynchronously; demonstrations need a synchronous verifier`,
    );
  return { turns, finalText, result };
}

function mistakeRates(rate: number | readonly number[], roleCount: number): readonly number[] {
  const rates = typeof rate === 'number' ? new Array<number>(roleCount).fill(rate) : rate;
  if (rates.length !== roleCount || rates.some((value) => !(value >= 0 && value <= 1))) {
    throw new TeamtrError(
      `mistakeRate must be a probability in [0, 1] or a list of ${roleCount} of them ` +
        `(one per role), got ${JSON.stringify(rate)}`,
    );
  }
  return rates;
}
