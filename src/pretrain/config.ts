import { z } from 'zod';
import { modelConfigSchema } from '../nn/config.js';
import { taskSpecSchema } from '../tasks/index.js';

/**
 * How `teamtr pretrain` builds the built-in models: one tiny character-level LM per role of a
 * task, trained on synthetic demonstrations in which each turn is replaced by a plausible
 * mistake with probability `mistakeRate` (the team built from them is competent but imperfect,
 * so RL has room), or one general chat model (`chat`).
 */
export const pretrainConfigSchema = z.strictObject({
  /**
   * The built-in task whose roles get a model each, or a list of tasks (e.g. one task at
   * several team sizes): role r's model then learns role r of every listed task that has it.
   */
  task: z.union([taskSpecSchema, z.array(taskSpecSchema).min(1).max(16)]).optional(),
  /**
   * Instead of per-role models of a task: one general chat model, pretrained on a mixture of
   * short text tasks (chat.ts), saved as a Hugging Face directory serving builtin:<name>.
   */
  chat: z
    .strictObject({
      /** Its folder under the built-in models. @default general */
      name: z
        .string()
        .regex(/^[a-z0-9][a-z0-9-]*$/, 'lowercase letters, digits and dashes')
        .default('general'),
    })
    .optional(),
  seed: z.number().int().nonnegative().default(0),
  /** Per-turn probability of a demonstrated mistake (per reply, for the chat model). */
  mistakeRate: z.number().min(0).max(1).default(0.2),
  steps: z.number().int().positive().default(1500),
  batchSize: z.number().int().positive().default(64),
  learningRate: z.number().positive().default(3e-3),
  /**
   * Start each role's model from the one trained before it (role r + 1 from role r): the roles
   * of a chain do the same job in different places, so the later ones learn it faster. The
   * shared model starts fresh.
   */
  warmStart: z.boolean().default(false),
  /** Also train one shared model that plays every role (the `single` baseline's base model); per-role models only. */
  shared: z.boolean().default(true),
  model: modelConfigSchema.optional(),
});
export type PretrainConfig = z.output<typeof pretrainConfigSchema>;

export interface PretrainProgress {
  /** `role-<r>` or `shared`. */
  model: string;
  index: number;
  models: number;
  step: number;
  steps: number;
  loss: number;
}

export interface PretrainResult {
  task: string;
  directories: string[];
  finalLosses: number[];
}
