import type { CertificateCheck, FamilyResult, TheoryExperimentResult } from './experiment.js';
import { scalingMetrics } from './experiment.js';
import { allSchedules, describeTightness, type BoundTightness } from './tightness.js';

/**
 * The one JSON object `teamtr theory --json` prints. The top-level slope keys are the headline
 * family's (the first in `settings.families`); `by_family` repeats them for every family.
 * `games` and `updates` count everything that was run and certificate-checked, all families and
 * schedules together.
 */
export interface TheorySummary {
  readonly stale_slope: number | null;
  readonly stale_ci: [number, number] | null;
  readonly fresh_slope: number | null;
  readonly fresh_ci: [number, number] | null;
  readonly games: number;
  readonly updates: number;
  readonly certificate_violations: number;
  /** max(0, max over updates of certificate − true improvement). */
  readonly max_violation: number;
  readonly spec_form_violations: number;
  readonly max_spec_form_violation: number;
  readonly family: string;
  /** Every certificate of certificate-bounds.ts over every update: tightness and violations. */
  readonly certificate_bounds: Readonly<Record<string, BoundTightness>>;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly by_family: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly [extra: string]: unknown;
}

function interval(value: readonly [number, number] | null): [number, number] | null {
  return value ? [value[0], value[1]] : null;
}

/** `<metric>_slope`, `<metric>_ci` and `<metric>_means` (per N: mean, standard error). */
export function familySlopes(family: FamilyResult): Record<string, unknown> {
  const entries: Record<string, unknown> = {};
  for (const metric of scalingMetrics) {
    const fit = family.fits[metric.key]!;
    entries[`${metric.summaryKey}_slope`] = fit.slope;
    entries[`${metric.summaryKey}_ci`] = interval(fit.interval);
    entries[`${metric.summaryKey}_means`] = fit.groups.map((group) => ({
      n: group.agentCount,
      mean: group.mean,
      se: group.standardError,
    }));
    if (fit.note) entries[`${metric.summaryKey}_note`] = fit.note;
  }
  return entries;
}

interface CheckEntries {
  readonly updates: number;
  readonly certificate_violations: number;
  readonly max_violation: number;
  readonly spec_form_violations: number;
  readonly max_spec_form_violation: number;
  readonly steps_missing_delta: number;
  readonly max_certificate_minus_true: number;
  readonly max_error_share_of_penalty: number;
  /** Per certificate of certificate-bounds.ts: violations, share positive, certificate/true quantiles. */
  readonly certificate_bounds: Record<string, BoundTightness>;
  /** The same, schedule by schedule. */
  readonly certificate_bounds_by_schedule: Record<string, Record<string, BoundTightness>>;
}

function checkEntries(check: CertificateCheck): CheckEntries {
  return {
    updates: check.updates,
    certificate_violations: check.violations,
    max_violation: Math.max(0, check.maxExcess),
    spec_form_violations: check.specFormViolations,
    max_spec_form_violation: Math.max(0, check.maxSpecFormExcess),
    max_certificate_minus_true: check.maxExcess,
    max_error_share_of_penalty: check.maxErrorShare,
    steps_missing_delta: check.stepsMissingDelta,
    certificate_bounds: describeTightness(allSchedules(check.bounds)),
    certificate_bounds_by_schedule: Object.fromEntries(
      Object.entries(check.bounds).map(([name, tallies]) => [name, describeTightness(tallies)]),
    ),
  };
}

export function summarizeTheory(
  result: TheoryExperimentResult,
  extras: Readonly<Record<string, unknown>> = {},
): TheorySummary {
  const headline = result.families[0]!;
  const fit = (key: string) => headline.fits[key]!;
  const config = result.config;
  const byFamily: Record<string, Record<string, unknown>> = {};
  for (const family of result.families) {
    byFamily[family.family] = { ...familySlopes(family), ...checkEntries(family.check) };
  }
  return {
    stale_slope: fit('staleError').slope,
    stale_ci: interval(fit('staleError').interval),
    fresh_slope: fit('freshError').slope,
    fresh_ci: interval(fit('freshError').interval),
    games: result.families.reduce((total, family) => total + family.outcomes.length, 0),
    ...checkEntries(result.check),
    family: headline.family,
    joint_slope: fit('jointError').slope,
    joint_ci: interval(fit('jointError').interval),
    stale_penalty_slope: fit('stalePenalty').slope,
    stale_penalty_ci: interval(fit('stalePenalty').interval),
    fresh_penalty_slope: fit('freshPenalty').slope,
    fresh_penalty_ci: interval(fit('freshPenalty').interval),
    settings: {
      agent_counts: [...config.agentCounts].sort((first, second) => first - second),
      tokens_per_turn: config.tokensPerTurn,
      vocabulary_size: config.vocabularySize,
      rounds: config.rounds,
      delta: config.delta,
      games_per_size: config.games,
      seed: config.seed,
      families: config.families,
      logit_scale: config.logitScale,
      bootstrap_samples: config.bootstrapSamples,
    },
    by_family: byFamily,
    ...extras,
  };
}
