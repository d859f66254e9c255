/**
 * The Task interface: where problems come from, who speaks in the default protocol, how a final
 * answer is scored, and (for built-in tasks) what an ideal turn looks like.
 *
 * Rendered shared context (the format demonstrations are written for):
 *
 *     <prompt>\n
 *     <tag of turn 0><text of turn 0>\n
 *     <tag of turn 1><text of turn 1>\n
 *     ...
 *
 * The prompt is one line. Every turn is one line; the team layer adds the short speaker tag in
 * front of it. Everything in this folder deals only with the prompt and the turns' content text
 * (no tag, no newline): `demonstrate` returns the content text, `verify` receives the content text
 * of the answer turn. An agent's model input is its role prompt followed by that shared context.
 *
 * Built-in tasks are written for tiny character-level models: prompts of ~10–30 characters,
 * turns of ≤ 10 characters, a small alphabet (see `Task.alphabet`).
 */
import type { RandomGenerator } from '../util/random.js';

export type SplitName = 'train' | 'eval';

/** One problem: its prompt line, its reference answer, and task-specific facts about it. */
export interface Problem {
  /** Unique within one `split` call; stable for the same seed (generated) or the same file (JSONL). */
  readonly id: string;
  readonly prompt: string;
  readonly answer: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

export interface SplitOptions {
  /** Seed of the generator (generated tasks) or of the subsample (JSONL tasks with `count`). */
  seed: number;
  /**
   * How many problems to return. Generated tasks return exactly this many. JSONL tasks return
   * every problem of the split when it is omitted, else a seeded sample of at most this many.
   */
  count?: number;
  /**
   * Generated tasks: refuse repeated prompts within the split (an error when the problem space
   * is too small for `count`). Ignored by JSONL tasks.
   * @default true for eval, false for train
   */
  unique?: boolean;
}

/** What a verifier found and how it compared it. */
export interface VerifyDetails {
  /** Which verifier ran: "exact", "numeric", "math", "choice". */
  verifier: string;
  /** The answer taken from the text, after normalization; null when nothing usable was found. */
  extracted: string | null;
  /** The reference answer, after the same normalization. */
  expected: string;
  /** How the answer was extracted and compared, for logs and dashboards. */
  explanation: string;
}

export interface VerifyResult {
  /** In [0, 1]. Every verifier here gives 1 for correct and 0 otherwise. */
  reward: number;
  correct: boolean;
  details: VerifyDetails;
}

/** One role of the default protocol; role index r is agent r of a default team. */
export interface RoleDefinition {
  readonly name: string;
  /** Prepended to the agent's rendered input; a few characters for the built-in tasks. */
  readonly prompt: string;
  /** One sentence for humans: what this role is expected to write. */
  readonly description: string;
}

/** Who speaks when, and which turn holds the final answer. */
export interface TaskProtocol {
  readonly roles: readonly RoleDefinition[];
  /** Role index of each turn, in speaking order (one round: [0, 1, …, N−1]). */
  readonly turnOrder: readonly number[];
  /** Index into `turnOrder` of the turn whose text is verified. */
  readonly answerTurn: number;
  /** Longest content text a turn should need; a generation budget in characters. */
  readonly maxTurnChars: number;
}

export interface DemonstrationContext {
  /** Role index of the turn to demonstrate. */
  role: number;
  /** Content texts of the earlier turns, in speaking order (may contain mistakes). */
  previousTurns: readonly string[];
  /**
   * Given when demonstrations are sampled (pretraining): a task whose ideal turn is one of
   * several equally good ones (the convention task's choice of code) draws its choice from it.
   * Without it, `demonstrate` returns one fixed ideal turn (what eval's turn accuracy compares).
   */
  random?: RandomGenerator;
}

export interface CorruptionRequest extends DemonstrationContext {
  problem: Problem;
  /** The text to corrupt, usually `demonstrate(problem, context)`. */
  text: string;
  random: RandomGenerator;
}

/**
 * Synthetic turns for pretraining base models. Demonstrations follow the protocol literally:
 * each role acts on what the earlier turns actually say, so an upstream mistake propagates
 * unless a checking role catches it. That is what makes every agent's turn matter to the team.
 */
export interface Demonstrator {
  /** The content text an ideal agent in `context.role` writes after `context.previousTurns`. */
  demonstrate(problem: Problem, context: DemonstrationContext): string;
  /**
   * A plausible mistake for that role (off-by-one, skipped step, rubber-stamped check, …).
   * Deterministic given `random`; always differs from `request.text`.
   */
  corrupt(request: CorruptionRequest): string;
}

export interface Task {
  readonly name: string;
  readonly description: string;
  readonly protocol: TaskProtocol;
  /**
   * Every character that prompts, answers, role prompts, demonstrations and corruptions can
   * contain (sorted, no duplicates), excluding the newline and speaker tags the team layer adds.
   * A character-level tokenizer built from it covers the task.
   */
  readonly alphabet: string;
  /** Deterministic for the same options; train and eval never share a prompt. */
  split(name: SplitName, options: SplitOptions): Problem[];
  /**
   * Scores the content text of the answer turn. Built-in tasks are pure and synchronous; a
   * task defined in code (custom.ts) may score asynchronously.
   */
  verify(problem: Problem, finalText: string): VerifyResult | Promise<VerifyResult>;
  /** Present for built-in tasks, absent for user datasets. */
  readonly demonstrator?: Demonstrator;
}

/** A task whose verifier answers at once (the built-in tasks and JSONL datasets). */
export interface BuiltInTask extends Task {
  verify(problem: Problem, finalText: string): VerifyResult;
}
