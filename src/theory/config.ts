import { z } from 'zod';
import { parseWithSchema } from '../util/schema.js';
import { gameFamilyNames } from './families.js';
import { maxTranscripts } from './game.js';

/**
 * The scaling experiment's settings: one strict schema, the single source of defaults (the CLI
 * flags of `teamtr theory` map onto these keys and are validated here).
 *
 * Defaults: T = 2 tokens per turn so that each agent's own update shifts the states of its
 * second token (with T = 1 and one round, fresh occupancy makes the surrogate exact and there is
 * no fresh error to fit); V = 2 keeps N = 8 at 2^16 transcripts.
 */
export const theoryConfigSchema = z
  .strictObject({
    /** Team sizes N to run. @default [2, 3, 4, 6, 8] */
    agentCounts: z
      .array(z.number().int().min(1))
      .min(2, 'a slope needs at least two team sizes')
      .default([2, 3, 4, 6, 8])
      .refine((counts) => new Set(counts).size === counts.length, 'team sizes must be distinct'),
    /** T, tokens per turn. @default 2 */
    tokensPerTurn: z.number().int().min(1).default(2),
    /** V, vocabulary size. @default 2 */
    vocabularySize: z.number().int().min(2).default(2),
    /** Rounds of turns. @default 1 */
    rounds: z.number().int().min(1).default(1),
    /** Token-level KL δ of every agent's step. @default 0.01 */
    delta: z.number().positive().max(10).default(0.01),
    /** Random games per team size. @default 60 */
    games: z.number().int().min(2).default(60),
    /** Seed of every random choice. @default 0 */
    seed: z.number().int().min(0).default(0),
    /**
     * Reward families to run, each with its own `games` per N; the first is the headline one
     * (the slopes printed first and the top-level keys of `--json`).
     * @default ['random', 'dense', 'consensus', 'chain']
     */
    families: z
      .array(z.enum(gameFamilyNames as [string, ...string[]]))
      .min(1)
      .default(['random', 'dense', 'consensus', 'chain'])
      .refine((names) => new Set(names).size === names.length, 'families must be distinct'),
    /** Initial logits are i.i.d. N(0, logitScale²). @default 1 */
    logitScale: z.number().positive().default(1),
    /** Bootstrap resamples for the slope intervals. @default 2000 */
    bootstrapSamples: z.number().int().min(100).default(2000),
  })
  .superRefine((config, context) => {
    const largest = Math.max(...config.agentCounts);
    const horizon = largest * config.tokensPerTurn * config.rounds;
    const transcripts = config.vocabularySize ** horizon;
    if (transcripts > maxTranscripts) {
      context.addIssue({
        code: 'custom',
        path: ['agentCounts'],
        message:
          `N=${largest} with T=${config.tokensPerTurn}, V=${config.vocabularySize}, ` +
          `rounds=${config.rounds} has ${transcripts} transcripts, more than the ${maxTranscripts} ` +
          'that can be enumerated; lower the largest N, T, V or rounds',
      });
    }
  });

export type TheoryConfigInput = z.input<typeof theoryConfigSchema>;
export type TheoryConfig = z.output<typeof theoryConfigSchema>;

/** Validates a (partial) config and fills defaults; throws ConfigError naming the bad key. */
export function resolveTheoryConfig(input: unknown, source = 'theory config'): TheoryConfig {
  return parseWithSchema(theoryConfigSchema, input ?? {}, source);
}
