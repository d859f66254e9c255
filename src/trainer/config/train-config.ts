import { z } from 'zod';
import { provenanceSchema, trackingConfigSchema } from './tracking.js';
import { loraConfigSchema } from '../../models/lora-config.js';
import { weightsDtypeSchema } from '../../models/weights-dtype.js';
import { objectiveNames } from '../../rl/objectives/index.js';
import { taskSpecSchema } from '../../tasks/index.js';
import { remoteEndpointSchema } from '../../team/remote-policy.js';
import { agentEngineSchema } from './tinker-engine.js';

/**
 * The one schema of a training run: the single source of defaults, validation, CLI flags
 * (every leaf is also `--kebab-path`, see cli/config-flags.ts) and the `config.json` saved in
 * each run directory. Unknown keys are errors that list the valid ones.
 */

export const agentConfigSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, "_" and "-" only (it names a folder)'),
    /**
     * The agent's model: a teamtr checkpoint directory, a Hugging Face model directory, or
     * `builtin:<task>/<role>` for the tiny models `teamtr pretrain` makes. Required unless
     * `endpoint` is given.
     */
    model: z.string().min(1).optional(),
    /** @default the task's role prompt for this agent's index */
    rolePrompt: z.string().optional(),
    /** Tag before this agent's turns in the shared context. @default the role's letter + ":" */
    speakerTag: z.string().min(1).optional(),
    /** Frozen agents play their turns but are never updated. @default true (false with `endpoint`) */
    trainable: z.boolean().optional(),
    /** Per-agent trust-region radius. @default trustRegion.delta */
    delta: z.number().nonnegative().max(10).optional(),
    /** Longest turn of this agent, in tokens. @default protocol.maxTurnTokens */
    maxTurnTokens: z.number().int().positive().max(65_536).optional(),
    /**
     * Strings that end this agent's turn (besides its end-of-turn token or newline). The turn's
     * text stops before the string; its recorded tokens end with the token that completed it.
     */
    stop: z.array(z.string().min(1).max(256)).max(16).optional(),
    /** Per-agent learning rate. @default optimizer.learningRate */
    learningRate: z.number().positive().max(1e4).optional(),
    /** Train low-rank adapters instead of the whole model: { rank, alpha, targetModules, … }. */
    lora: loraConfigSchema.optional(),
    /**
     * "bfloat16" stores the frozen weights (a LoRA agent's base, a frozen agent's model) in
     * half the bytes: batch-1 decoding about twice as fast, each weight rounded to 8
     * significant bits. Not for an agent that trains all its weights. "auto": bfloat16 when the
     * weights are bfloat16 values already (a BF16 checkpoint; nothing is rounded) and the agent
     * does not train all of them, else float32. @default "float32"
     */
    weightsDtype: weightsDtypeSchema.optional(),
    /** A frozen agent played by an OpenAI-compatible endpoint: { baseURL, model, apiKeyEnv, … }. */
    endpoint: remoteEndpointSchema.optional(),
    /**
     * A trainable agent whose model lives on a training service instead of this machine:
     * { tinker: { baseURL, baseModel, tokenizer, lora: { rank } } } (docs/method.md §3).
     */
    engine: agentEngineSchema.optional(),
  })
  .superRefine((agent, context) => {
    if (agent.engine) {
      for (const key of ['model', 'endpoint', 'lora'] as const)
        if (agent[key] !== undefined)
          context.addIssue({
            code: 'custom',
            path: [key],
            message: `an agent trained on a service (engine.tinker) has its model there: drop "${key}"${key === 'lora' ? ' and give the adapter rank as engine.tinker.lora.rank' : key === 'model' ? ' (name its tokenizer in engine.tinker.tokenizer)' : ''}`,
          });
      return;
    }
    if ((agent.model === undefined) === (agent.endpoint === undefined)) {
      context.addIssue({
        code: 'custom',
        path: ['model'],
        message: 'give exactly one of "model" (a local model) and "endpoint" (a remote one)',
      });
    }
    if (agent.endpoint && agent.trainable) {
      context.addIssue({
        code: 'custom',
        path: ['trainable'],
        message:
          'a remote agent (endpoint) has no local weights to train; drop "trainable" or set it to false',
      });
    }
    if (agent.weightsDtype === 'bfloat16' && agent.endpoint) {
      context.addIssue({
        code: 'custom',
        path: ['weightsDtype'],
        message:
          'a remote agent (endpoint) has no local weights to store in bfloat16; drop "weightsDtype"',
      });
    }
    if (
      agent.weightsDtype === 'bfloat16' &&
      agent.trainable !== false &&
      !agent.endpoint &&
      !agent.lora
    ) {
      context.addIssue({
        code: 'custom',
        path: ['weightsDtype'],
        message:
          'bfloat16 holds frozen weights only and this agent trains all of its weights: add "lora" (the base then stays frozen in bfloat16), set "trainable": false, or use "float32"',
      });
    }
    if (agent.endpoint && agent.lora) {
      context.addIssue({
        code: 'custom',
        path: ['lora'],
        message:
          'LoRA adapters need a local model; a remote agent (endpoint) is frozen: give "model" instead of "endpoint", or drop "lora"',
      });
    }
  })
  .transform((agent) => ({ ...agent, trainable: agent.trainable ?? agent.endpoint === undefined }));

export const scheduleNames = ['teamtr', 'lazy', 'sequential-stale', 'joint', 'single'] as const;
export { objectiveNames } from '../../rl/objectives/index.js';

// --- swaps (issue #7, see trainer/swap/swap.ts) ---
export const alignmentModes = ['sft', 'kl', 'sft+kl'] as const;

/**
 * Stage-0 alignment of an incoming model before sequential updates resume (docs/method.md §6):
 * supervised on the outgoing agent's turn texts from fresh team batches (`sft`, works across
 * tokenizers), and/or KL to the outgoing agent on the same contexts (`kl`, needs the same
 * tokenizer; `sft+kl` falls back to `sft` with a note when the tokenizers differ).
 */
export const alignmentConfigSchema = z.strictObject({
  /** Optimizer steps; 0 = no alignment. */
  steps: z.number().int().nonnegative().default(0),
  /** What the new model is fitted to before it joins the team (docs/method.md §6). */
  mode: z.enum(alignmentModes).default('sft'),
  /** Peak learning rate of the alignment steps. */
  learningRate: z.number().positive().default(1e-3),
  /**
   * Linear warmup, then cosine decay to 0.1·learningRate: a fresh Adam on a pretrained model
   * otherwise takes large early steps that undo more than they fit. @default ⌈steps / 10⌉
   */
  warmupSteps: z.number().int().nonnegative().optional(),
  /** Each fresh team batch is split into this many minibatches, one step each... */
  minibatches: z.number().int().positive().default(4),
  /** ...and passed over this many times before the next batch is sampled. */
  epochs: z.number().int().positive().default(1),
  /** @default rollout.problemsPerBatch */
  problemsPerBatch: z.number().int().positive().optional(),
  /** @default rollout.groupSize */
  groupSize: z.number().int().positive().optional(),
  /** Gradients are clipped to this global norm before each alignment step. */
  maxGradNorm: z.number().positive().default(1),
});

export const swapConfigSchema = z.strictObject({
  /** The swap happens right before this stage runs (after stage − 1). */
  stage: z.number().int().positive(),
  /** Name of the agent replaced. */
  agent: z.string().min(1),
  /** The incoming model (same forms as agents[].model). */
  model: z.string().min(1),
  /** The incoming model's role prompt. @default the outgoing agent's */
  rolePrompt: z.string().optional(),
  /** @default the agent's learning rate */
  learningRate: z.number().positive().optional(),
  /** Problems of the batches measuring the reward before and after the swap. @default rollout.problemsPerBatch */
  measureProblems: z.number().int().positive().optional(),
  alignment: alignmentConfigSchema.prefault({}),
});
// --- end swaps ---

export const trainConfigSchema = z.strictObject({
  /** Seeds every random choice of the run. */
  seed: z.number().int().nonnegative().default(0),
  task: taskSpecSchema.prefault({ name: 'arithmetic-chain' }),
  /** @default one built-in agent per role of the task */
  agents: z.array(agentConfigSchema).min(1).optional(),
  protocol: z
    .strictObject({
      /** Agent index of each turn. @default the task's turn order */
      turnOrder: z.array(z.number().int().nonnegative().max(1_023)).min(1).max(1_024).optional(),
      /** Index of the turn whose text is verified. @default the task's answer turn */
      answerTurn: z.number().int().nonnegative().max(1_023).optional(),
      /** Shuffle the agents' turn order in every episode. */
      permutePerEpisode: z.boolean().default(false),
      /** @default the task's longest turn + 2 */
      maxTurnTokens: z.number().int().positive().max(65_536).optional(),
    })
    .prefault({}),
  /**
   * teamtr (agents one at a time, a fresh batch after every update), lazy (one at a time,
   * resampling only when the batch in hand has gone stale: `lazy.threshold`), sequential-stale
   * (one at a time on the stage's first batch, HAPPO-style reweighting), joint (all agents on
   * one batch), single (one shared model plays every role).
   */
  schedule: z.enum(scheduleNames).default('teamtr'),
  /**
   * The `lazy` schedule (docs/method.md §11): after each update it keeps the batch in hand
   * while 2ε·TV̂ (TV̂ how far the updates since moved the team, measured on that batch) is
   * below threshold × the update's certificate slack, and samples a fresh batch otherwise.
   */
  lazy: z
    .strictObject({
      /** κ ≥ 0: 0 resamples after every update (= teamtr), "infinity" never (= sequential-stale). */
      threshold: z.union([z.number().nonnegative().max(1e12), z.literal('infinity')]).default(1),
    })
    .prefault({}),
  /** Order of agent updates in a stage: reverse turn order makes suffix resampling cheapest. */
  updateOrder: z.enum(['reverse', 'fixed', 'random']).default('reverse'),
  /** The policy-gradient objective each agent's update optimizes (docs/method.md §4). */
  objective: z
    .strictObject({
      /** grpo, dapo or ppo: how advantages and the clipped loss are computed. */
      kind: z.enum(objectiveNames).default('grpo'),
      /** @default 0.2 */
      clipLow: z.number().positive().lt(1).optional(),
      /** @default 0.2 (0.28 for dapo) */
      clipHigh: z.number().positive().max(10).optional(),
      /** @default sequence-mean for grpo, token-mean for dapo and ppo */
      aggregation: z.enum(['token-mean', 'sequence-mean', 'sequence-sum-normalized']).optional(),
      /** GRPO baseline: mean of the other members of the group. */
      leaveOneOut: z.boolean().default(false),
      /** Dr. MAS: normalize advantages with each agent's own statistics. */
      agentWiseNormalization: z.boolean().default(false),
      /** DAPO: drop groups whose rewards are all equal. @default true for dapo */
      dynamicSampling: z.boolean().optional(),
    })
    .prefault({}),
  rollout: z
    .strictObject({
      /** Prompts in a team batch. */
      problemsPerBatch: z.number().int().positive().max(100_000).default(16),
      /** Trajectories per prompt: the group whose rewards give each other's baseline. */
      groupSize: z.number().int().min(2).max(4_096).default(8),
      /** Sampling temperature of every agent's turns. */
      temperature: z.number().positive().max(100).default(1),
      /** Reuse unchanged prefixes between a stage's batches (teamtr, single-round fixed order). */
      suffixResampling: z.boolean().default(true),
    })
    .refine((rollout) => rollout.problemsPerBatch * rollout.groupSize <= 1_000_000, {
      message:
        'problemsPerBatch × groupSize is the number of trajectories in one batch, held in memory at once; keep it at most 1,000,000',
      path: ['groupSize'],
    })
    .prefault({}),
  /** How each agent's update is kept near its old policy (docs/method.md §3). */
  trustRegion: z
    .strictObject({
      /**
       * δ: the largest mean token-level KL(π_old ‖ π_new) over the agent's turns an update may
       * reach; a step past it is backtracked or undone (`backoff`).
       */
      delta: z.number().nonnegative().max(10).default(0.01),
      /** Passes over an update's batch. */
      epochs: z.number().int().positive().max(1_000).default(2),
      /** Gradient steps per pass, each on one slice of the batch. */
      minibatches: z.number().int().positive().max(100_000).default(2),
      /** What an out-of-region step does: undo it, or halve it until back in region. */
      backoff: z.enum(['restore', 'line-search']).default('line-search'),
      /** Gradients are clipped to this global norm before each step. */
      maxGradNorm: z.number().positive().max(1e6).default(1),
      /**
       * Per-agent adaptive δ (off when absent): after each stage an agent's δ grows by `growth`
       * while its update's held-out improvement is confidently positive (z ≥ confidence) and in
       * region, and shrinks by `shrink` after a confident regression, within [minDelta,
       * maxDelta]. Needs certificate.heldOutProblems > 0.
       */
      adaptiveDelta: z
        .strictObject({
          /** δ is multiplied by this after a confident improvement. */
          growth: z.number().gt(1).max(10).default(1.5),
          /** δ is multiplied by this after a confident regression. */
          shrink: z.number().gt(0).lt(1).default(0.5),
          /** δ never goes below this. */
          minDelta: z.number().positive().max(10).default(0.001),
          /** δ never goes above this. */
          maxDelta: z.number().positive().max(10).default(0.1),
          /** z (improvement over its standard error) that counts as confident. */
          confidence: z.number().positive().max(10).default(1),
        })
        .refine((settings) => settings.minDelta <= settings.maxDelta, {
          message: 'minDelta must be at most maxDelta',
          path: ['minDelta'],
        })
        .optional(),
      /**
       * Stage rollback (off when absent): after a stage whose held-out change (the sum of its
       * updates' held-out improvements) is confidently negative, z ≤ −confidence, every
       * trainable agent goes back to its parameters and optimizer state before the stage.
       * Needs certificate.heldOutProblems > 0.
       */
      rollback: z
        .strictObject({
          /** z (the stage's held-out change over its standard error) at or below −confidence. */
          confidence: z.number().positive().max(10).default(2),
        })
        .optional(),
    })
    .prefault({}),
  optimizer: z
    .strictObject({
      /** AdamW learning rate of every agent (agents[].learningRate overrides it). */
      learningRate: z.number().positive().max(1e4).default(1e-4),
      /** AdamW's first-moment decay. */
      beta1: z.number().min(0).lt(1).default(0.9),
      /** AdamW's second-moment decay. */
      beta2: z.number().min(0).lt(1).default(0.99),
      /** Decoupled weight decay (norms and biases exempt). */
      weightDecay: z.number().nonnegative().max(1e4).default(0),
    })
    .prefault({}),
  budget: z
    .strictObject({
      /** Stop once the policies generated this many tokens (the matched-budget axis). */
      generatedTokens: z.number().int().positive().max(1e12).default(400_000),
      /** Also stop after this many stages. */
      maxStages: z.number().int().positive().max(1e9).optional(),
    })
    .prefault({}),
  /** Held-out team accuracy during training (eval split of the task). */
  evaluation: z
    .strictObject({
      /** Eval problems per evaluation. */
      problems: z.number().int().positive().max(1_000_000).default(200),
      /** Evaluate every this many stages (and always at the start and the end). */
      every: z.number().int().positive().max(1e9).default(10),
      /**
       * Also evaluate after every this many agent updates (counted over the run), inside a
       * stage if need be: schedules compared at matched updates read the same update counts.
       */
      everyUpdates: z.number().int().positive().max(1e9).optional(),
      /**
       * Also evaluate whenever the run's generated tokens pass a multiple of this, with the
       * team as it was when they did: schedules compared at matched tokens read the same counts.
       */
      everyTokens: z.number().int().positive().max(1e12).optional(),
      /**
       * 1 = the policy itself (what training optimizes and what the team does when sampled);
       * 0 = greedy decoding.
       */
      temperature: z.number().nonnegative().max(100).default(1),
    })
    .prefault({}),
  /** Save a resumable checkpoint every this many stages. */
  checkpointEvery: z.number().int().positive().max(1e9).default(5),
  /**
   * Also save the frozen base weights of LoRA agents in each checkpoint (self-contained, but as
   * large as the model). Without it a LoRA agent's checkpoint holds its adapters in PEFT layout
   * and refers to its base model, which resume loads again.
   */
  checkpointBaseWeights: z.boolean().default(false),
  certificate: z
    .strictObject({
      /** Bound on |E_{a∼π_new} A(s, a)|: the reward range unless something tighter is known. */
      epsilon: z.number().positive().max(1e6).default(1),
      /** Confidence level of the certificate's lower bound. */
      confidence: z.number().gt(0).lt(1).default(0.95),
      /**
       * Prompts per stage, apart from the stage's own, on which every update is also measured
       * (paired, before and after it): the out-of-sample yardstick for the certificate. Their
       * rollouts are counted as measurement tokens, not in the training budget. 0 = off.
       */
      heldOutProblems: z.number().int().nonnegative().max(100_000).default(0),
    })
    .prefault({}),
  /** Replace agents' models mid-training (plug-and-play, docs/method.md §6). */
  swaps: z.array(swapConfigSchema).default([]),
  /**
   * Recorded by the trainer when a run begins (not for users to set): a fingerprint of the
   * task's problems. Resume refuses a task whose data changed.
   */
  taskFingerprint: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /** Transcripts, TensorBoard and Weights & Biases (docs/guides/tracking.md). */
  tracking: trackingConfigSchema.prefault({}),
  /** Recorded by the trainer when a run begins (not for users to set): version, host, task source. */
  provenance: provenanceSchema.optional(),
});

export type TrainConfigInput = z.input<typeof trainConfigSchema>;
export type TrainConfig = z.output<typeof trainConfigSchema>;
export type AgentConfig = z.output<typeof agentConfigSchema>;
export type ScheduleName = (typeof scheduleNames)[number];
export type SwapConfig = z.output<typeof swapConfigSchema>;
export type AlignmentConfig = z.output<typeof alignmentConfigSchema>;
