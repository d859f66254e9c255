import { RandomGenerator } from '../../util/random.js';
import type { ScoringItem } from '../score.js';

/** `length` token ids in [1, 50]. */
export function randomTokens(random: RandomGenerator, length: number): number[] {
  return Array.from({ length }, () => 1 + random.nextInt(50));
}

/**
 * A trust-region unit's items as a team makes them: two groups of trajectories, each with its
 * own prompt; the first agent's items share their whole context, a later agent's share the
 * prompt and differ after it (other agents' turns); completions of several lengths, one empty,
 * so rows are padded differently and shared prefixes sit at different slots.
 */
export function teamItems(seed: number): ScoringItem[] {
  const random = new RandomGenerator(seed);
  const items: ScoringItem[] = [];
  for (const promptLength of [23, 17]) {
    const prompt = randomTokens(random, promptLength);
    for (const completionLength of [9, 14, 3, 14]) {
      items.push({ context: prompt, completion: randomTokens(random, completionLength) });
      const turn = randomTokens(random, 5 + random.nextInt(8));
      items.push({
        context: [...prompt, ...turn],
        completion: randomTokens(random, completionLength),
      });
    }
  }
  items.push({ context: randomTokens(random, 4), completion: [] });
  items.push({ context: [7], completion: randomTokens(random, 6) });
  return items;
}
