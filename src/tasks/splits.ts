import { TeamtrError } from '../util/errors.js';
import { RandomGenerator } from '../util/random.js';
import type { Problem, SplitName, SplitOptions } from './types.js';

/**
 * Train/eval membership is a property of the problem itself: a hash of its key (the prompt of a
 * generated problem, the id or prompt of a dataset line) mapped to [0, 1) and compared with the
 * eval fraction. So the splits are disjoint whatever the seeds, the same problem always lands in
 * the same split, and raising the eval fraction only moves problems from train to eval.
 */

/** FNV-1a over UTF-16 code units, then the murmur3 finalizer so short keys spread evenly. */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

export function splitOf(key: string, evalFraction: number): SplitName {
  return hashString(key) / 2 ** 32 < evalFraction ? 'eval' : 'train';
}

export interface GeneratedProblem {
  prompt: string;
  answer: string;
  metadata?: Record<string, unknown>;
}

export interface GenerateSplitOptions {
  /** Names the task in error messages. */
  taskName: string;
  split: SplitName;
  seed: number;
  /** Required: generated tasks have no natural size. */
  count: number | undefined;
  evalFraction: number;
  /** Refuse repeated prompts. @default true for eval, false for train */
  unique?: boolean;
  /** Draws one candidate problem; called until enough candidates fall in `split`. */
  generate: (random: RandomGenerator) => GeneratedProblem;
}

/**
 * Draws candidates from one seeded stream and keeps those whose prompt hashes into `split`.
 * Ids are `<split>-<seed>-<index>`.
 */
export function generateSplit(options: GenerateSplitOptions): Problem[] {
  const { taskName, split, seed, count, evalFraction } = options;
  if (count === undefined || !Number.isInteger(count) || count < 0) {
    throw new TeamtrError(
      `${taskName}: generated tasks need a count (a non-negative integer), got ${count}`,
    );
  }
  const unique = options.unique ?? split === 'eval';
  const random = new RandomGenerator(seed);
  const seen = new Set<string>();
  const problems: Problem[] = [];
  const splitShare = split === 'eval' ? evalFraction : 1 - evalFraction;
  const attemptBudget = Math.ceil((200 * (count + 10)) / Math.max(splitShare, 1e-3));
  for (let attempt = 0; problems.length < count; attempt++) {
    if (attempt >= attemptBudget) {
      throw new TeamtrError(
        `${taskName}: found only ${problems.length} distinct ${split} problems of the ${count} ` +
          `asked for; ask for fewer, raise the difficulty (more distinct problems)` +
          (split === 'train' ? ', or allow repeats with unique: false' : ''),
      );
    }
    const candidate = options.generate(random);
    if (splitOf(candidate.prompt, evalFraction) !== split) continue;
    if (unique) {
      if (seen.has(candidate.prompt)) continue;
      seen.add(candidate.prompt);
    }
    problems.push({ id: `${split}-${seed}-${problems.length}`, ...candidate });
  }
  return problems;
}

/** The `split` method of a generated task: `generate` draws one candidate problem. */
export function generatedSplitMethod(
  taskName: string,
  evalFraction: number,
  generate: (random: RandomGenerator) => GeneratedProblem,
): (split: SplitName, options: SplitOptions) => Problem[] {
  return (split, options) =>
    generateSplit({
      taskName,
      split,
      seed: options.seed,
      count: options.count,
      unique: options.unique,
      evalFraction,
      generate,
    });
}

/**
 * A dataset's split: every problem when `count` is absent or covers them all, else a seeded
 * sample of `count` problems kept in their original order.
 */
export function seededSample(
  problems: readonly Problem[],
  options: { seed: number; count?: number },
): Problem[] {
  const { count } = options;
  if (count === undefined || count >= problems.length) return [...problems];
  if (!Number.isInteger(count) || count < 0)
    throw new TeamtrError(`count must be a non-negative integer, got ${count}`);
  const indices = problems.map((_problem, index) => index);
  new RandomGenerator(options.seed).shuffle(indices);
  return indices
    .slice(0, count)
    .sort((first, second) => first - second)
    .map((index) => problems[index]!);
}
