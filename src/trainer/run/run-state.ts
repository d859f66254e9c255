import { z } from 'zod';
import { checkpointIntegritySchema } from './checkpoint-integrity.js';

/** Held-out accuracy as the summary reports it. */
export const evaluationSummarySchema = z.strictObject({
  accuracy: z.number(),
  /** Wilson 95% interval. */
  interval: z.tuple([z.number(), z.number()]),
  count: z.number().int().nonnegative(),
});
export type EvaluationSummary = z.output<typeof evaluationSummarySchema>;

/** Swaps applied so far, and swaps whose team reward has not yet come back (swap.ts). */
export const swapProgressSchema = z.strictObject({
  applied: z
    .array(
      z.strictObject({
        /** Index into config.swaps. */
        index: z.number().int().nonnegative(),
        stage: z.number().int().positive(),
        agent: z.string(),
        model: z.string(),
      }),
    )
    .default([]),
  pendingRecovery: z
    .array(
      z.strictObject({
        agent: z.string(),
        swapStage: z.number().int().positive(),
        threshold: z.number(),
      }),
    )
    .default([]),
});
export type SwapProgress = z.output<typeof swapProgressSchema>;

/**
 * Everything a checkpoint carries besides weights and optimizer state: with the config, it
 * determines the rest of the run (every stage's randomness derives from the seed and the stage).
 */
export const runStateSchema = z.preprocess(
  fromVersionOneLayout,
  z.strictObject({
    /** Last completed stage. */
    stage: z.number().int().nonnegative(),
    generatedTokens: z.number().int().nonnegative(),
    updates: z.number().int().nonnegative(),
    /** Length of metrics.jsonl at this state (a resumed run truncates it there). */
    metricsBytes: z.number().int().nonnegative(),
    elapsedSeconds: z.number().nonnegative(),
    /** Held-out accuracy before training (null only before the first evaluation). */
    evaluationBefore: evaluationSummarySchema.nullable(),
    swaps: swapProgressSchema.default({ applied: [], pendingRecovery: [] }),
    /** Each unit's current δ when trustRegion.adaptiveDelta moves it (empty otherwise). */
    deltas: z.record(z.string(), z.number().nonnegative()).optional(),
    /**
     * The integrity record of a saved state (checkpoint-integrity.ts, sealed-state.ts): state.json
     * without one is refused; only a state in memory, not yet saved, has none.
     */
    integrity: checkpointIntegritySchema.optional(),
  }),
);
export type RunState = z.output<typeof runStateSchema>;

/** The state of a run that has not started. */
export function initialRunState(): RunState {
  return {
    stage: 0,
    generatedTokens: 0,
    updates: 0,
    metricsBytes: 0,
    elapsedSeconds: 0,
    evaluationBefore: null,
    swaps: { applied: [], pendingRecovery: [] },
  };
}

/** Checkpoints written before the typed state kept swap progress in an untyped `extra`. */
function fromVersionOneLayout(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || !('extra' in value)) return value;
  const { extra, ...rest } = value as { extra?: { swaps?: unknown } };
  return extra?.swaps === undefined ? rest : { ...rest, swaps: extra.swaps };
}
