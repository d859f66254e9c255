import { supervisedLossAndGradient, type SupervisedExample } from '../nn/teacher-forcing.js';
import type { TransformerLM } from '../nn/transformer.js';
import { AdamW, decayExempt } from '../optim/adamw.js';
import { clipGradientNorm } from '../optim/clip.js';
import { learningRateAt } from '../optim/schedule.js';
import type { RandomGenerator } from '../util/random.js';

/** How one built-in model is fitted to its examples (every pretrained model shares it). */
export interface FitPlan {
  steps: number;
  batchSize: number;
  learningRate: number;
  padId: number;
  /** One training example; every random choice comes from `random`. */
  sample: (random: RandomGenerator) => SupervisedExample;
  /** Called every 25 steps and at the last, with the loss smoothed over about 20 steps. */
  onProgress?: (step: number, loss: number) => void;
}

/**
 * Teacher-forced AdamW (β = 0.9, 0.99; weight decay 0.01 off norms and biases) with 100 warmup
 * steps, a cosine decay to a tenth of the rate and gradients clipped to norm 1. Returns the
 * final smoothed loss.
 */
export function fitModel(model: TransformerLM, random: RandomGenerator, plan: FitPlan): number {
  const optimizer = new AdamW(model.trainableParameters(), {
    learningRate: plan.learningRate,
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
    const examples = Array.from({ length: plan.batchSize }, () => plan.sample(random));
    const loss = supervisedLossAndGradient(model, examples, plan.padId);
    const clipping = clipGradientNorm(model.trainableParameters(), 1);
    optimizer.update({
      learningRate: learningRateAt(schedule, plan.learningRate, step),
      gradientScale: clipping.scale,
    });
    optimizer.zeroGrad();
    smoothed = Number.isNaN(smoothed) ? loss : 0.95 * smoothed + 0.05 * loss;
    if (plan.onProgress && (step % 25 === 0 || step === plan.steps - 1))
      plan.onProgress(step + 1, smoothed);
  }
  return smoothed;
}
