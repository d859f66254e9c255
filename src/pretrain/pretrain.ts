import path from 'node:path';
import { saveCheckpoint } from '../io/checkpoint.js';
import { TransformerLM } from '../nn/transformer.js';
import { getTask, sampleDemonstration, type Task } from '../tasks/index.js';
import { renderAgentInput, speakerTagFor, type SharedTurn } from '../team/render.js';
import { turnTerminator } from '../team/policy.js';
import { CharTokenizer, defaultCharAlphabet } from '../tokenizer/char.js';
import { RandomGenerator } from '../util/random.js';
import { ConfigError } from '../util/errors.js';
import { parseWithSchema } from '../util/schema.js';
import { pretrainChatModel } from './chat.js';
import {
  pretrainConfigSchema,
  type PretrainConfig,
  type PretrainProgress,
  type PretrainResult,
} from './config.js';
import { fitModel } from './fit.js';

export {
  pretrainConfigSchema,
  type PretrainConfig,
  type PretrainProgress,
  type PretrainResult,
} from './config.js';

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
 * Positions the base models need: the longest input + turn over 200 demonstrations of each
 * task's last role (the longest context) and a turn's budget of slack, rounded up to a
 * multiple of 32; at least 96, the short-turn tasks' size.
 */
function contextFor(tasks: readonly Task[], tokenizer: CharTokenizer, seed: number): number {
  let needed = 96;
  for (const task of tasks) {
    const random = new RandomGenerator(`${seed}/pretrain/${task.name}/context`);
    const lastRole = task.protocol.turnOrder.at(-1)!;
    let longest = 0;
    for (let sample = 0; sample < 200; sample++) {
      const example = roleExample(task, lastRole, tokenizer, random, 0, random.nextUint32());
      longest = Math.max(longest, example.input.length + example.target.length);
    }
    needed = Math.max(needed, Math.ceil((longest + task.protocol.maxTurnChars) / 32) * 32);
  }
  return needed;
}

/** The models one config trains: one per role, then the shared one that plays every role. */
function modelPlans(config: PretrainConfig, roles: number) {
  const everyRole = Array.from({ length: roles }, (_unused, role) => role);
  return [
    ...everyRole.map((role) => ({ name: `role-${role}`, roles: [role], steps: config.steps })),
    // The `single` baseline's base model, trained as long as all role models together.
    ...(config.shared ? [{ name: 'shared', roles: everyRole, steps: config.steps * roles }] : []),
  ];
}

/**
 * Trains and saves one base model per role into `outputDirectory/role-<r>`, and a shared one
 * into `shared`. With a list of tasks, role r's model learns role r of each task that has it
 * (a task drawn uniformly per example). With `chat`, the general chat model instead, saved as
 * a Hugging Face directory at `outputDirectory` itself.
 */
export async function pretrain(
  configInput: unknown,
  outputDirectory: string,
  onProgress?: (progress: PretrainProgress) => void,
): Promise<PretrainResult> {
  const config = parseWithSchema(pretrainConfigSchema, configInput, 'pretrain config');
  if (config.chat && config.task)
    throw new ConfigError(
      'pretrain config',
      'give either task (per-role base models of a built-in task) or chat (one general chat model), not both',
    );
  if (config.chat)
    return pretrainChatModel({ ...config, chat: config.chat }, outputDirectory, onProgress);
  return pretrainRoleModels(config, outputDirectory, onProgress);
}

/** The folder `teamtr pretrain` writes under the built-in models: the chat model's name or the (first) task's. */
export function pretrainOutputName(configInput: unknown): string {
  const config = parseWithSchema(pretrainConfigSchema, configInput, 'pretrain config');
  if (config.chat) return config.chat.name;
  const task = Array.isArray(config.task) ? config.task[0]! : (config.task ?? defaultTask);
  return task.name;
}

const defaultTask = { name: 'arithmetic-chain' } as const;

async function pretrainRoleModels(
  config: PretrainConfig,
  outputDirectory: string,
  onProgress?: (progress: PretrainProgress) => void,
): Promise<PretrainResult> {
  const tasks = await pretrainTasks(config);
  const name = tasks[0]!.name;
  const tokenizer = new CharTokenizer({ alphabet: defaultCharAlphabet });
  const modelConfig =
    config.model ??
    defaultBaseModelConfig(tokenizer.vocabSize, contextFor(tasks, tokenizer, config.seed));
  const roles = Math.max(...tasks.map((task) => task.protocol.roles.length));
  const directories: string[] = [];
  const finalLosses: number[] = [];
  const plans = modelPlans(config, roles);
  let previousRole: ReturnType<TransformerLM['stateDict']> | null = null;
  for (const [index, plan] of plans.entries()) {
    const random = new RandomGenerator(`${config.seed}/pretrain/${name}/${plan.name}`);
    const model = new TransformerLM(modelConfig, random.split('init'));
    if (config.warmStart && previousRole && plan.roles.length === 1)
      model.loadStateDict(previousRole);
    const smoothed = fitModel(model, random, {
      steps: plan.steps,
      batchSize: config.batchSize,
      learningRate: config.learningRate,
      padId: tokenizer.padId!,
      sample: roleSampler(plan.roles, tasks, tokenizer, random, config.mistakeRate),
      onProgress: (step, loss) =>
        onProgress?.({
          model: plan.name,
          index,
          models: plans.length,
          step,
          steps: plan.steps,
          loss,
        }),
    });
    const directory = path.join(outputDirectory, plan.name);
    await saveRoleModel(directory, { model, tokenizer, config, plan, finalLoss: smoothed });
    directories.push(directory);
    finalLosses.push(smoothed);
    previousRole = model.stateDict();
    model.destroy();
  }
  return { task: name, directories, finalLosses };
}

/** The config's task or tasks (the default task when it names none), resolved. */
function pretrainTasks(config: PretrainConfig): Promise<Task[]> {
  const specs = Array.isArray(config.task) ? config.task : [config.task ?? defaultTask];
  return Promise.all(
    specs.map((spec, index) =>
      getTask(spec, Array.isArray(config.task) ? `task[${index}]` : 'task'),
    ),
  );
}

/**
 * Draws one training example from `random`: a role among `roles`, then a task having that role
 * (drawn only when several do), then a demonstration of it.
 */
function roleSampler(
  roles: readonly number[],
  tasks: readonly Task[],
  tokenizer: CharTokenizer,
  random: RandomGenerator,
  mistakeRate: number,
): () => Example {
  return () => {
    const role = roles[random.nextInt(roles.length)]!;
    const holders = tasks.filter((task) => role < task.protocol.roles.length);
    const task = holders.length > 1 ? holders[random.nextInt(holders.length)]! : holders[0]!;
    return roleExample(task, role, tokenizer, random, mistakeRate, random.nextUint32());
  };
}

/** Saves a trained model with its tokenizer and, as `extra.pretrain`, how it was trained. */
async function saveRoleModel(
  directory: string,
  trained: {
    model: TransformerLM;
    tokenizer: CharTokenizer;
    config: PretrainConfig;
    plan: { name: string; roles: number[] };
    finalLoss: number;
  },
): Promise<void> {
  const { model, tokenizer, config, plan, finalLoss } = trained;
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
        finalLoss,
      },
    },
  });
}
