import { certificateLowerBound, mean, type CertificateBoundMethod } from '../rl/index.js';
import { perStateTotalVariation, rewardRange } from './certificate-bounds.js';
import { computeOccupancy, expectedReturnOf } from './exact.js';
import { positionsOf, type TabularGame } from './game.js';
import { prefixOf, rollout } from './monte-carlo.js';
import { createGame, gameFamilyByName } from './families.js';
import { randomTeamPolicy, type TeamPolicy } from './policy.js';
import { createSeededRandom, deriveSeed, type SeededRandom } from './random.js';
import { entryAt, updateAgents } from './sampled-update.js';

/**
 * How often the probabilistic certificate (rl/certificate-confidence.ts) holds, measured in the
 * tabular lab where everything it bounds is exact. One agent's trust-region update; held-out
 * batches of `clusters` prompts × `clusterSize` trajectories sampled from the team before it,
 * each trajectory's term built as the trainer builds it from the held-out batch:
 *
 *   c = (R − b)·Σ_k (ρ_k − 1) − ε_R·Σ_k |W_k − 1|·TV_k(s_k)
 *
 * with b the leave-one-out mean reward of the trajectory's cluster (so a cluster's terms share
 * their baselines), ρ_k the agent's token ratios, W_k their running product before token k and
 * TV_k the exact total variation of its next-token distributions (the second-order certificate,
 * certificate.ts step 7). E[c] = B, the exact second-order certificate, and B ≤ J' − J.
 */
export interface CoverageUpdate {
  readonly game: TabularGame;
  readonly team: TeamPolicy;
  readonly agent: number;
  readonly delta: number;
}

interface UpdateTerms {
  /** Σ_k (ρ_k − 1) and the penalty term ε_R·Σ_k |W_k − 1|·TV_k of every transcript. */
  readonly gains: Float64Array;
  readonly penalties: Float64Array;
  /** B = E[c] exactly, and the true improvement J' − J. */
  readonly expected: number;
  readonly trueImprovement: number;
  /** Bounds every c can take, from the tables alone (for the empirical-Bernstein bound). */
  readonly range: { low: number; high: number };
  readonly epsilon: number;
}

function termsOf({ game, team, agent, delta }: CoverageUpdate): UpdateTerms {
  const next = updateAgents(game, team, [agent], delta);
  const positions = positionsOf(game, agent);
  const epsilon = rewardRange(game);
  const variations = positions.map((position) =>
    perStateTotalVariation(
      team.tables[position]!.probabilities,
      next.tables[position]!.probabilities,
      game.vocabularySize,
    ),
  );
  const transcripts = game.rewards.length;
  const gains = new Float64Array(transcripts);
  const penalties = new Float64Array(transcripts);
  for (let transcript = 0; transcript < transcripts; transcript++) {
    let weight = 1;
    positions.forEach((position, index) => {
      const entry = entryAt(game, transcript, position);
      const state = prefixOf(game, transcript, position);
      penalties[transcript]! += epsilon * Math.abs(weight - 1) * variations[index]![state]!;
      const ratio = Math.exp(
        next.tables[position]!.logProbabilities[entry]! -
          team.tables[position]!.logProbabilities[entry]!,
      );
      gains[transcript]! += ratio - 1;
      weight *= ratio;
    });
  }
  const distribution = computeOccupancy(game, team)[game.horizon]!;
  let expected = 0;
  let low = Infinity;
  let high = -Infinity;
  for (let transcript = 0; transcript < transcripts; transcript++) {
    expected +=
      distribution[transcript]! *
      (gains[transcript]! * game.rewards[transcript]! - penalties[transcript]!);
    low = Math.min(low, -Math.abs(gains[transcript]!) * epsilon - penalties[transcript]!);
    high = Math.max(high, Math.abs(gains[transcript]!) * epsilon - penalties[transcript]!);
  }
  const trueImprovement = expectedReturnOf(game, next) - expectedReturnOf(game, team);
  return { gains, penalties, expected, trueImprovement, range: { low, high }, epsilon };
}

/** One held-out batch: the terms c and the cluster of each trajectory. */
function sampleBatch(
  update: CoverageUpdate,
  terms: UpdateTerms,
  shape: { clusters: number; clusterSize: number },
  random: SeededRandom,
): { perTrajectory: Float64Array; clusterIds: Int32Array } {
  const { clusters, clusterSize } = shape;
  const perTrajectory = new Float64Array(clusters * clusterSize);
  const clusterIds = new Int32Array(clusters * clusterSize);
  for (let cluster = 0; cluster < clusters; cluster++) {
    const drawn = Array.from({ length: clusterSize }, () =>
      rollout(update.game, update.team, random),
    );
    const rewards = drawn.map((transcript) => update.game.rewards[transcript]!);
    const total = rewards.reduce((sum, reward) => sum + reward, 0);
    drawn.forEach((transcript, member) => {
      const baseline = (total - rewards[member]!) / (clusterSize - 1);
      const row = cluster * clusterSize + member;
      perTrajectory[row] =
        (rewards[member]! - baseline) * terms.gains[transcript]! - terms.penalties[transcript]!;
      clusterIds[row] = cluster;
    });
  }
  return { perTrajectory, clusterIds };
}

export interface CoverageCell {
  method: CertificateBoundMethod | 'point estimate';
  /** The stated rate 1 − α ('point estimate': the mean itself, no stated rate: NaN). */
  confidence: number;
  trials: number;
  /** Batches whose bound lay at or below B, the expectation it bounds. */
  heldForExpectation: number;
  /** Batches whose bound lay at or below the true improvement J' − J. */
  heldForTrueImprovement: number;
}

export interface CoverageOptions {
  updates: readonly CoverageUpdate[];
  clusters: number;
  clusterSize: number;
  /** Batches per update. */
  trials: number;
  confidences: readonly number[];
  methods: readonly CertificateBoundMethod[];
  bootstrapSamples: number;
  random: SeededRandom;
}

/** Coverage per method and stated rate, pooled over the updates' batches. */
export function certificateCoverage(options: CoverageOptions): CoverageCell[] {
  const cells = new Map<string, CoverageCell>();
  const cellOf = (method: CoverageCell['method'], confidence: number) => {
    const key = `${method}/${confidence}`;
    const cell = cells.get(key) ?? {
      method,
      confidence,
      trials: 0,
      heldForExpectation: 0,
      heldForTrueImprovement: 0,
    };
    cells.set(key, cell);
    return cell;
  };
  const random = { nextInt: (bound: number) => options.random.nextInteger(bound) };
  for (const update of options.updates) {
    const terms = termsOf(update);
    const record = (cell: CoverageCell, bound: number) => {
      cell.trials++;
      if (bound <= terms.expected) cell.heldForExpectation++;
      if (bound <= terms.trueImprovement) cell.heldForTrueImprovement++;
    };
    for (let trial = 0; trial < options.trials; trial++) {
      const batch = sampleBatch(update, terms, options, options.random);
      record(cellOf('point estimate', Number.NaN), mean(batch.perTrajectory));
      for (const method of options.methods) {
        for (const confidence of options.confidences) {
          const { lowerBound } = certificateLowerBound({
            ...batch,
            alpha: 1 - confidence,
            method,
            random,
            samples: options.bootstrapSamples,
            range: terms.range,
          });
          record(cellOf(method, confidence), lowerBound);
        }
      }
    }
  }
  return [...cells.values()];
}

/** B and J' − J of an update (what the coverage is measured against). */
export function exactCertificate(update: CoverageUpdate): {
  expected: number;
  trueImprovement: number;
  epsilon: number;
} {
  const { expected, trueImprovement, epsilon } = termsOf(update);
  return { expected, trueImprovement, epsilon };
}

/**
 * The updates the coverage figure uses: for each family, a random game of N agents (T = 2,
 * V = 2, one round) and a random team, and the last agent's update by the KL-δ step.
 */
export function coverageUpdates({
  families,
  agentCount,
  delta,
  seed,
}: {
  families: readonly string[];
  agentCount: number;
  delta: number;
  seed: number;
}): CoverageUpdate[] {
  return families.map((family, index) => {
    const random = createSeededRandom(deriveSeed(seed, index));
    const shape = { agentCount, tokensPerTurn: 2, vocabularySize: 2, rounds: 1, family };
    const game = createGame(shape, gameFamilyByName(family), random);
    return { game, team: randomTeamPolicy(game, random, 1), agent: agentCount - 1, delta };
  });
}
