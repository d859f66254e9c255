import { z } from 'zod';

/** A learning-rate schedule as data (saved in configs), evaluated by `learningRateAt`. */
export const learningRateScheduleSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('constant') }),
  z.strictObject({
    kind: z.literal('warmup-cosine'),
    warmupSteps: z.number().int().nonnegative(),
    totalSteps: z.number().int().positive(),
    /** Final learning rate as a fraction of the peak. @default 0.1 */
    minimumRatio: z.number().min(0).max(1).default(0.1),
  }),
]);
export type LearningRateSchedule = z.output<typeof learningRateScheduleSchema>;

/** The learning rate at (0-based) `step` for peak rate `peak`. */
export function learningRateAt(schedule: LearningRateSchedule, peak: number, step: number): number {
  if (schedule.kind === 'constant') return peak;
  const { warmupSteps, totalSteps, minimumRatio } = schedule;
  if (step < warmupSteps) return (peak * (step + 1)) / warmupSteps;
  const progress = Math.min(1, (step - warmupSteps) / Math.max(1, totalSteps - warmupSteps));
  const cosine = 0.5 * (1 + Math.cos(Math.PI * progress));
  return peak * (minimumRatio + (1 - minimumRatio) * cosine);
}
