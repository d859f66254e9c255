import { completionLogDistributions, completionLogits, type ScoringItem } from '../../nn/score.js';
import { supervisedLossAndGradient, type SupervisedExample } from '../../nn/teacher-forcing.js';
import type { TransformerLM } from '../../nn/transformer.js';
import { AdamW } from '../../optim/adamw.js';
import { clipGradientNorm } from '../../optim/clip.js';
import { learningRateAt, type LearningRateSchedule } from '../../optim/schedule.js';
import type { Task } from '../../tasks/index.js';
import { turnTerminator } from '../../team/policy.js';
import { renderAgentInput, type SharedTurn } from '../../team/render.js';
import { rollout } from '../../team/rollout.js';
import type { Agent, Team } from '../../team/team.js';
import type { TeamBatch } from '../../team/types.js';
import { clearPool, logSoftmax, sumOfProducts, tidy } from '../../tensor/index.js';
import type { Tokenizer } from '../../tokenizer/types.js';
import { ConfigError } from '../../util/errors.js';
import { RandomGenerator } from '../../util/random.js';
import type { AlignmentConfig } from '../config/train-config.js';

/**
 * Stage-0 alignment (docs/method.md §6): before sequential updates resume, fit an incoming model to
 * the role of the agent it replaces, on that agent's turns in fresh batches of the current team.
 *
 * - `sft` aligns on text: each context is rendered with the newcomer's own role prompt and
 *   tokenizer, and the target is the outgoing agent's turn TEXT (plus the turn terminator when
 *   the turn ended by stopping), so it works across tokenizers.
 * - `kl` minimizes KL(π_outgoing ‖ π_newcomer) over the whole vocabulary at every position of
 *   the outgoing agent's exact tokens. Token ids only mean the same thing under the same
 *   tokenizer, so `kl` alone with different tokenizers is a ConfigError (validated when the
 *   swap is scheduled); `sft+kl` then falls back to `sft` and says so in its note.
 */

export type AlignmentMode = AlignmentConfig['mode'];

export interface AlignmentResult {
  steps: number;
  /** The objective used (the configured one unless it fell back). */
  mode: AlignmentMode;
  note: string | null;
  /** Loss of every step (cross-entropy + KL, nats per token). */
  losses: number[];
  /** Tokens the team batches of the alignment generated. */
  generatedTokens: number;
}

/** A model and its tokenizer: what decides whether KL over token ids is defined. */
export interface Vocabulary {
  model: TransformerLM;
  tokenizer: Tokenizer;
}

/** Same tokenizer (as serialized) and same number of output rows: token ids mean the same. */
export function sharesVocabulary(a: Vocabulary, b: Vocabulary): boolean {
  return (
    a.model.config.vocabSize === b.model.config.vocabSize &&
    JSON.stringify(a.tokenizer.toJSON()) === JSON.stringify(b.tokenizer.toJSON())
  );
}

/** The objective to use given the configured one and whether the vocabularies agree. */
export function resolveAlignmentMode(
  configured: AlignmentMode,
  sameVocabulary: boolean,
  where = 'alignment.mode',
): { mode: AlignmentMode; note: string | null } {
  if (sameVocabulary || configured === 'sft') return { mode: configured, note: null };
  if (configured === 'kl') {
    throw new ConfigError(
      where,
      '"kl" needs the incoming model to use the outgoing agent\'s tokenizer (KL over token ids is undefined across vocabularies); use "sft", which aligns on text, or "sft+kl", which falls back to it',
    );
  }
  return {
    mode: 'sft',
    note: "sft+kl fell back to sft: the incoming tokenizer differs from the outgoing agent's, so KL over token ids is undefined; aligned on turn text only",
  };
}

/** One turn of the outgoing agent, seen from the newcomer (SFT) and from the teacher (KL). */
export interface AlignmentExample {
  /** Newcomer's input ids (its role prompt, its tokenizer) and the turn text it should write. */
  supervised: SupervisedExample;
  /** The outgoing agent's exact context and tokens (the teacher's view). */
  teacher: ScoringItem;
  /** The newcomer's context with the outgoing agent's exact tokens (KL, same vocabulary only). */
  student: ScoringItem;
}

/** Every turn `agentIndex` played in `batch`, rendered for the newcomer. */
export function alignmentExamples(
  batch: TeamBatch,
  team: Team,
  agentIndex: number,
  newcomer: Agent,
): AlignmentExample[] {
  const examples: AlignmentExample[] = [];
  for (const trajectory of batch.trajectories) {
    const prompt = batch.problems[trajectory.problemIndex]!.prompt;
    trajectory.turns.forEach((turn, position) => {
      if (turn.agentIndex !== agentIndex || turn.tokens.length === 0) return;
      const shared: SharedTurn[] = trajectory.turns.slice(0, position).map((earlier) => ({
        speakerTag: team.agents[earlier.agentIndex]!.speakerTag,
        text: earlier.text,
      }));
      const input = newcomer.policy.encodeInput(renderAgentInput(newcomer, prompt, shared));
      const target = newcomer.policy.tokenizer.encode(
        turn.finishReason === 'stop' ? `${turn.text}${turnTerminator}` : turn.text,
      );
      if (target.length === 0) return;
      examples.push({
        supervised: { input, target },
        teacher: { context: turn.inputIds, completion: turn.tokens },
        student: { context: input, completion: turn.tokens },
      });
    });
  }
  return examples;
}

/**
 * KL(teacher ‖ student) per token, mean over the minibatch's tokens, with its gradient
 * accumulated into the student. Teacher rows are computed without gradients.
 * d/d log q_v of −Σ p_v log q_v is −p_v: injected into the student's log-softmax.
 */
export function klLossAndGradient(
  student: TransformerLM,
  teacher: TransformerLM,
  examples: readonly AlignmentExample[],
): number {
  const teacherLogs = completionLogDistributions(
    teacher,
    examples.map((example) => example.teacher),
  );
  const vocab = student.config.vocabSize;
  const positions = teacherLogs.length / vocab;
  const weights = new Float32Array(teacherLogs.length);
  let entropyTerm = 0;
  for (let index = 0; index < teacherLogs.length; index++) {
    const probability = Math.exp(teacherLogs[index]!);
    weights[index] = -probability / positions;
    if (probability > 0) entropyTerm += (probability * teacherLogs[index]!) / positions;
  }
  return tidy(() => {
    const { logits } = completionLogits(
      student,
      examples.map((example) => example.student),
    );
    const crossEntropy = sumOfProducts(logSoftmax(logits), weights); // −(1/N) Σ p·log q
    crossEntropy.backward();
    return entropyTerm + crossEntropy.item();
  });
}

export interface AlignmentOptions {
  /** The team before the swap: its batches supply the outgoing agent's turns. */
  team: Team;
  task: Task;
  agentIndex: number;
  /** The incoming agent (a local policy), not yet in the team. */
  newcomer: Agent;
  settings: AlignmentConfig & { problemsPerBatch: number; groupSize: number };
  temperature: number;
  /** Adam moments' decay rates (the run's optimizer settings). */
  beta1: number;
  beta2: number;
  /** Seed of the alignment's batches and minibatch order, e.g. `<seed>/stage/<k>/swap/align`. */
  seed: string;
}

/** A team batch whose outgoing-agent turns the newcomer is fitted to. */
async function alignmentBatch(options: AlignmentOptions, batchIndex: number): Promise<TeamBatch> {
  const batchSeed = `${options.seed}/batch/${batchIndex}`;
  const problems = options.task.split('train', {
    seed: new RandomGenerator(batchSeed).nextUint32(),
    count: options.settings.problemsPerBatch,
  });
  return rollout({
    team: options.team,
    task: options.task,
    problems,
    groupSize: options.settings.groupSize,
    seed: batchSeed,
    temperature: options.temperature,
  });
}

/**
 * The newcomer's alignment objective and optimizer: `step` fits one minibatch (supervised on
 * the outgoing agent's turns and/or KL to it) and returns its loss.
 */
function createAligner(options: AlignmentOptions): {
  mode: AlignmentMode;
  note: string | null;
  step: (minibatch: AlignmentExample[], stepIndex: number) => number;
} {
  const { team, agentIndex, newcomer, settings } = options;
  const outgoing = team.agents[agentIndex]!.policy;
  const student = newcomer.policy.model;
  if (!student || !outgoing.model)
    throw new ConfigError('swaps', 'alignment needs local models on both sides of the swap');
  const teacher = outgoing.model;
  const { mode, note } = resolveAlignmentMode(
    settings.mode,
    sharesVocabulary(
      { model: teacher, tokenizer: outgoing.tokenizer },
      { model: student, tokenizer: newcomer.policy.tokenizer },
    ),
  );
  const parameters = student.trainableParameters();
  const optimizer = new AdamW(parameters, {
    learningRate: settings.learningRate,
    beta1: options.beta1,
    beta2: options.beta2,
    epsilon: 1e-8,
    weightDecay: 0,
  });
  const padId = newcomer.policy.tokenizer.padId ?? 0;
  const schedule: LearningRateSchedule = {
    kind: 'warmup-cosine',
    warmupSteps: settings.warmupSteps ?? Math.ceil(settings.steps / 10),
    totalSteps: settings.steps,
    minimumRatio: 0.1,
  };
  const step = (minibatch: AlignmentExample[], stepIndex: number): number => {
    let loss = 0;
    if (mode !== 'kl')
      loss += supervisedLossAndGradient(
        student,
        minibatch.map((example) => example.supervised),
        padId,
      );
    if (mode !== 'sft') loss += klLossAndGradient(student, teacher, minibatch);
    const clipping = clipGradientNorm(parameters, settings.maxGradNorm);
    optimizer.update({
      learningRate: learningRateAt(schedule, settings.learningRate, stepIndex),
      gradientScale: clipping.scale,
    });
    optimizer.zeroGrad();
    return loss;
  };
  return { mode, note, step };
}

/** Runs `settings.steps` alignment steps on the newcomer's model (its own optimizer, discarded after). */
export async function alignNewcomer(options: AlignmentOptions): Promise<AlignmentResult> {
  const { team, agentIndex, newcomer, settings } = options;
  const { mode, note, step } = createAligner(options);
  const shuffler = new RandomGenerator(`${options.seed}/order`);
  const losses: number[] = [];
  let generatedTokens = 0;
  for (let batchIndex = 0; losses.length < settings.steps; batchIndex++) {
    const batch = await alignmentBatch(options, batchIndex);
    generatedTokens += batch.generatedTokens;
    const examples = alignmentExamples(batch, team, agentIndex, newcomer);
    if (examples.length === 0) {
      return {
        steps: losses.length,
        mode,
        note: `${note ? `${note}; ` : ''}the outgoing agent wrote no tokens in a team batch, alignment stopped`,
        losses,
        generatedTokens,
      };
    }
    const size = Math.ceil(examples.length / settings.minibatches);
    for (let epoch = 0; epoch < settings.epochs; epoch++) {
      const order = shuffler.shuffle(examples.map((_example, index) => index));
      for (let start = 0; start < order.length && losses.length < settings.steps; start += size)
        losses.push(
          step(
            order.slice(start, start + size).map((index) => examples[index]!),
            losses.length,
          ),
        );
    }
  }
  // Alignment's buffer sizes (text-level contexts, minibatches) are not the RL stages' ones.
  clearPool();
  return { steps: losses.length, mode, note, losses, generatedTokens };
}
