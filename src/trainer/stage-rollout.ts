import type { Problem, Task } from '../tasks/index.js';
import { rollout } from '../team/rollout.js';
import { firstTurnOf, hasSeveralRounds, type Team } from '../team/team.js';
import type { TeamBatch } from '../team/types.js';

/**
 * How a stage's batches are drawn from the team (its training batches, its closing batch and
 * its held-out batches): the run's group size and temperature, and after some agents alone
 * changed, only the suffix from their first turn on when suffix resampling applies.
 */
export class StageRollouts {
  constructor(
    private readonly team: Team,
    private readonly task: Task,
    private readonly settings: {
      groupSize: number;
      temperature: number;
      suffixResampling: boolean;
    },
  ) {}

  /**
   * A batch of `problems` from the team; after the agents `reuseAfter.changed` (indices) alone
   * changed, its suffix.
   */
  draw(
    problems: Problem[],
    seed: string,
    reuseAfter: { previous: TeamBatch; changed: readonly number[] } | undefined,
    extra: { keepHiddenStatesOf?: number[] } = {},
  ): Promise<TeamBatch> {
    const fromTurn = reuseAfter ? this.suffixStart(reuseAfter.changed) : null;
    return rollout({
      team: this.team,
      task: this.task,
      problems,
      groupSize: this.settings.groupSize,
      seed,
      temperature: this.settings.temperature,
      reuse:
        reuseAfter && fromTurn !== null ? { previous: reuseAfter.previous, fromTurn } : undefined,
      ...extra,
    });
  }

  /**
   * First turn to resample after the agents `changed` were updated, or null when a full
   * resample is needed.
   */
  private suffixStart(changed: readonly number[]): number | null {
    const { protocol } = this.team;
    if (!this.settings.suffixResampling || hasSeveralRounds(protocol) || protocol.permutePerEpisode)
      return null;
    const turns = changed.map((index) => firstTurnOf(protocol, index)).filter((turn) => turn >= 0);
    return turns.length > 0 ? Math.min(...turns) : null;
  }
}
