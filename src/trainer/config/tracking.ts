import { z } from 'zod';

/**
 * Where a run came from, recorded in its config.json when it begins (not for users to set):
 * the teamtr version, the machine, and the task's source — a task named in the config, one
 * given in code, or a module file with its SHA-256.
 */
export const provenanceSchema = z.strictObject({
  teamtrVersion: z.string(),
  node: z.string(),
  host: z.strictObject({
    platform: z.string(),
    arch: z.string(),
    cpu: z.string(),
    cores: z.number().int().nonnegative(),
    memoryBytes: z.number().nonnegative(),
  }),
  task: z.discriminatedUnion('source', [
    z.strictObject({ source: z.literal('config'), name: z.string() }),
    z.strictObject({ source: z.literal('code'), name: z.string() }),
    z.strictObject({
      source: z.literal('module'),
      name: z.string(),
      path: z.string(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    }),
  ]),
});

export type Provenance = z.output<typeof provenanceSchema>;

/** What a run writes besides metrics.jsonl (tracking.*). */
export const trackingConfigSchema = z.strictObject({
  /** Episodes of each stage's last batch kept in transcripts.jsonl (`teamtr samples`); 0 = none. */
  transcriptsPerStage: z.number().int().nonnegative().max(64).default(4),
  /** Also write the metrics as a TensorBoard event file in the run directory. */
  tensorboard: z.boolean().default(true),
  /**
   * Weights & Biases. offline (default): nothing is sent; the TensorBoard event file is the
   * record, uploaded later with `wandb sync RUN_DIR`. online: logged live through the optional
   * `@wandb/sdk` package (WANDB_API_KEY).
   */
  wandb: z
    .strictObject({
      /** The W&B project the run is logged to. */
      project: z.string().min(1),
      /** The W&B team or user that owns the project. @default your W&B default entity */
      entity: z.string().min(1).optional(),
      /** online needs the `@wandb/sdk` and `graphql` packages installed, and WANDB_API_KEY. */
      mode: z.enum(['offline', 'online']).default('offline'),
    })
    .optional(),
});
