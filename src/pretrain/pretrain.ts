import path from 'node:path';
import { z } from 'zod';
import { saveCheckpoint } from '../io/checkpoint.js';
import { modelConfigSchema } from '../nn/config.js';
import { supervisedLossAndGradient } from '../nn/teacher-forcing.js';
import { TransformerLM } from '../nn/transformer.js';
import { AdamW, decayExempt } from '../optim/adamw.js';
import { clipGradientNorm } from '../optim/clip.js';
import { learningRateAt } from '../optim/schedule.js';
import { getTask, sampleDemonstration, taskSpecSchema, type Task } from '../tasks/index.js';
import { renderAgentInput, speakerTagFor, type SharedTurn } from '../team/render.js';
import { turnTerminator } from '../team/policy.js';
import { CharTokenizer, defaultCharAlphabet } from '../tokenizer/char.js';
import { RandomGenerator } from '../util/random.js';
import { parseWithSchema } from '../util/schema.js';

/**
 * Built-in base models: one tiny character-level LM per role of a task, trained on synthetic
 * demonstrations in which each turn is replaced by a plausible mistake with probability
 * `mistakeRate`. The team built from them is competent but imperfect, so RL has room.
 */
export const pretrainConfigSchema = z.strictObject({
  task: taskSpecSchema.prefault({ name: 'arithmetic-chain' }),
  seed: z.number().int().nonnegative().default(0),
  /** Per-turn probability of a demonstrated mistake. */
  mistakeRate: z.number().min(0).max(1).default(0.2),
  steps: z.number().int().positive().default(1500),
  batchSize: z.number().int().positive().default(64),
  learningRate: z.number().positive().default(3e-3),
  /** Also train one shared model that plays every role (the `single` baseline's base model). */
  shared: z.boolean().default(true),
  model: modelConfigSchema.optional(),
});
export type PretrainConfig = z.output<typeof pretrainConfigSchema>;

/**
 * The built-in models' shape. `maxPositions` fits the task: 96 for the short-turn tasks, more
 * for long-turn ones (pretrain measures the longest demonstrated context).
 */
export function defaultBaseModelConfig(vocabSize: number, maxPositions = 96) {
  return {
    architecture: 'llama' as const,
    vocabSize,
    hiddenSize: 64,
    layers: 2,
    heads: 4,
    kvHeads: 2,
    intermediateSize: 160,
    maxPositions,
    tieEmbeddings: true,
  };
}

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

/** One training example: the role's rendered input and the turn it should write. */
interface Example {
  input: number[];
  target: number[];
}

function roleExample(
  task: Task,
  role: number,
  tokenizer: CharTokenizer,
  random: RandomGenerator,
  mistakeRate: number,
  problemSeed: number,
): Example {
  const [problem] = task.split('train', { seed: problemSeed, count: 1 });
  const demonstration = sampleDemonstration({ task, problem: problem!, random, mistakeRate });
  const position = task.protocol.turnOrder.indexOf(role);
  const previous: SharedTurn[] = demonstration.turns
    .slice(0, position)
    .map((turn) => ({ speakerTag: speakerTagFor(turn.role), text: turn.text }));
  const agent = { rolePrompt: task.protocol.roles[role]!.prompt, speakerTag: speakerTagFor(role) };
  const input = [
    tokenizer.bosId!,
    ...tokenizer.encode(renderAgentInput(agent, problem!.prompt, previous)),
  ];
  const target = tokenizer.encode(demonstration.turns[position]!.text + turnTerminator);
  return { input, target };
}

/**
 * Positions the base models need: the longest input + turn over 200 demonstrations of the last
 * role (the longest context) and a turn's budget of slack, rounded up to a multiple of 32; at
 * least 96, the short-turn tasks' size.
 */
function contextFor(task: Task, tokenizer: CharTokenizer, config: PretrainConfig): number {
  const random = new RandomGenerator(`${config.seed}/pretrain/${task.name}/context`);
  const lastRole = task.protocol.turnOrder.at(-1)!;
  let longest = 0;
  for (let sample = 0; sample < 200; sample++) {
    const example = roleExample(task, lastRole, tokenizer, random, 0, random.nextUint32());
    longest = Math.max(longest, example.input.length + example.target.length);
  }
  return Math.max(96, Math.ceil((longest + task.protocol.maxTurnChars) / 32) * 32);
}

/** Trains and saves one base model per role into `outputDirectory/role-<r>`, and a shared one into `shared`. */
export async function pretrain(
  configInput: unknown,
  outputDirectory: string,
  onProgress?: (progress: PretrainProgress) => void,
): Promise<PretrainResult> {
  const config = parseWithSchema(pretrainConfigSchema, configInput, 'pretrain config');
  const task = await getTask(config.task, 'task');
  const tokenizer = new CharTokenizer({ alphabet: defaultCharAlphabet });
  const modelConfig =
    config.model ??
    defaultBaseModelConfig(tokenizer.vocabSize, contextFor(task, tokenizer, config));
  const roles = task.protocol.roles.length;
  const directories: string[] = [];
  const finalLosses: number[] = [];
  // One model per role, then one shared model that plays every role (the `single` baseline's
  // base model), trained as long as all role models together.
  const plans = [
    ...Array.from({ length: roles }, (_unused, role) => ({
      name: `role-${role}`,
      roles: [role],
      steps: config.steps,
    })),
    ...(config.shared
      ? [
          {
            name: 'shared',
            roles: Array.from({ length: roles }, (_unused, role) => role),
            steps: config.steps * roles,
          },
        ]
      : []),
  ];
  for (const [index, plan] of plans.entries()) {
    const random = new RandomGenerator(`${config.seed}/pretrain/${task.name}/${plan.name}`);
    const model = new TransformerLM(modelConfig, random.split('init'));
    const optimizer = new AdamW(model.trainableParameters(), {
      learningRate: config.learningRate,
      beta1: 0.9,
      beta2: 0.99,
      epsilon: 1e-8,
      weightDecay: 0.01,
      noDecay: decayExempt,
    });
    const schedule = {
      kind: 'warmup-cosine' as const,
      warmupSteps: Math.min(100, plan.steps),
      totalSteps: plan.steps,
      minimumRatio: 0.1,
    };
    let smoothed = Number.NaN;
    for (let step = 0; step < plan.steps; step++) {
      const examples = Array.from({ length: config.batchSize }, () => {
        const role = plan.roles[random.nextInt(plan.roles.length)]!;
        return roleExample(task, role, tokenizer, random, config.mistakeRate, random.nextUint32());
      });
      const loss = supervisedLossAndGradient(model, examples, tokenizer.padId!);
      const clipping = clipGradientNorm(model.trainableParameters(), 1);
      optimizer.update({
        learningRate: learningRateAt(schedule, config.learningRate, step),
        gradientScale: clipping.scale,
      });
      optimizer.zeroGrad();
      smoothed = Number.isNaN(smoothed) ? loss : 0.95 * smoothed + 0.05 * loss;
      if (onProgress && (step % 25 === 0 || step === plan.steps - 1))
        onProgress({
          model: plan.name,
          index,
          models: plans.length,
          step: step + 1,
          steps: plan.steps,
          loss: smoothed,
        });
    }
    const directory = path.join(outputDirectory, plan.name);
    await saveCheckpoint(directory, {
      config: model.config,
      parameters: model.stateDict(),
      tokenizer: tokenizer.toJSON(),
      extra: {
        pretrain: {
          ...config,
          task: config.task,
          model: plan.name,
          roles: plan.roles,
          finalLoss: smoothed,
        },
      },
    });
    directories.push(directory);
    finalLosses.push(smoothed);
    model.destroy();
  }
  return { task: task.name, directories, finalLosses };
}
