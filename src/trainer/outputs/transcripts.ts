import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../io/atomic.js';
import { turnTokenLimit, type Team } from '../../team/team.js';
import type { TeamBatch, Trajectory } from '../../team/types.js';
import { generatedTokenCount } from '../../team/episodes.js';
import { FileFormatError } from '../../util/errors.js';
import { runFiles } from '../run/run-directory.js';
import type { Transcript, TurnEnding } from './transcript-type.js';

export type { Transcript, TranscriptTurn, TurnEnding } from './transcript-type.js';

/**
 * Transcripts: what the agents wrote, kept in the run directory (transcripts.jsonl, one
 * episode a line) so that a run can be read as well as measured. Each stage keeps a few
 * episodes of its last batch (the team after the stage); `teamtr eval --samples N` prints
 * episodes of an evaluation in the same form.
 */

/** Characters of a turn's text a transcript keeps (so that a stage's lines stay small). */
export const maxTurnCharacters = 2000;

/** Characters of a prompt or an answer a transcript keeps. */
const maxProblemCharacters = 2000;

function clipped(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}

/** Why `turn` ended, from its finish reason and the agent's own limit. */
function turnEnding(team: Team, trajectory: Trajectory, turnIndex: number): TurnEnding {
  const turn = trajectory.turns[turnIndex]!;
  if (turn.finishReason === 'stop') return 'stop';
  return generatedTokenCount(turn) >= turnTokenLimit(team, turn.agentIndex)
    ? 'turn limit'
    : 'total limit';
}

/** The transcript of one episode of `batch`. */
export function transcriptOf(
  team: Team,
  batch: TeamBatch,
  trajectory: Trajectory,
  stage: number,
): Transcript {
  const problem = batch.problems[trajectory.problemIndex]!;
  return {
    stage,
    problem: {
      id: problem.id,
      prompt: clipped(problem.prompt, maxProblemCharacters),
      answer: clipped(problem.answer, maxProblemCharacters),
    },
    sample: trajectory.sampleIndex,
    reward: trajectory.reward,
    correct: trajectory.correct,
    turns: trajectory.turns.map((turn, turnIndex) => ({
      agent: team.agents[turn.agentIndex]?.name ?? `agent ${turn.agentIndex}`,
      text: clipped(turn.text, maxTurnCharacters),
      tokens: generatedTokenCount(turn),
      ended: turnEnding(team, trajectory, turnIndex),
      ...(turn.text.length > maxTurnCharacters ? { truncated: true as const } : {}),
    })),
  };
}

/**
 * Up to `count` transcripts of `batch`, one per prompt (its first episode) from the first
 * prompts on, then the prompts' further episodes: deterministic, and as many prompts as can be.
 */
export function sampleTranscripts(
  team: Team,
  batch: TeamBatch,
  stage: number,
  count: number,
): Transcript[] {
  const ordered = [...batch.trajectories].sort(
    (a, b) => a.sampleIndex - b.sampleIndex || a.problemIndex - b.problemIndex,
  );
  return ordered.slice(0, count).map((trajectory) => transcriptOf(team, batch, trajectory, stage));
}

export function transcriptsPath(runDirectory: string): string {
  return path.join(runDirectory, runFiles.transcripts);
}

/** Appends a stage's transcripts in one write (a reader ignores a line still being written). */
export function appendTranscripts(runDirectory: string, transcripts: readonly Transcript[]): void {
  if (transcripts.length === 0) return;
  appendFileSync(
    transcriptsPath(runDirectory),
    transcripts.map((transcript) => JSON.stringify(transcript)).join('\n') + '\n',
  );
}

/** Every complete transcript of a run, oldest first (none before its first stage). */
export function readTranscripts(runDirectory: string): Transcript[] {
  const file = transcriptsPath(runDirectory);
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, 'utf8').split('\n').slice(0, -1);
  return lines.flatMap((line, index) => {
    if (!line.trim()) return [];
    try {
      return [JSON.parse(line) as Transcript];
    } catch {
      throw new FileFormatError(
        file,
        `line ${index + 1} is not a JSON transcript: the file was edited or damaged; delete it (it holds only samples, and the run goes on without it)`,
      );
    }
  });
}

/**
 * Keeps the transcripts of stages up to `stage` (a resumed run writes the later ones again),
 * replacing the file atomically; any unreadable line is dropped with the stages after it.
 */
export async function keepTranscriptsThrough(runDirectory: string, stage: number): Promise<void> {
  const file = transcriptsPath(runDirectory);
  if (!existsSync(file)) return;
  const kept: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n').slice(0, -1)) {
    let transcript: Transcript;
    try {
      transcript = JSON.parse(line) as Transcript;
    } catch {
      break;
    }
    if (transcript.stage > stage) break;
    kept.push(line);
  }
  await writeFileAtomic(file, kept.map((line) => `${line}\n`).join(''));
}
