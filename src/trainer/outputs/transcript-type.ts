/**
 * One episode as transcripts.jsonl records it (transcripts.ts writes and reads it), and as the
 * dashboard's browser code reads it from the transcripts API. Types only and no imports, so the
 * browser code can share it.
 */

/** Why a turn ended: its agent's stop token or stop string, its own limit, or the episode's. */
export type TurnEnding = 'stop' | 'turn limit' | 'total limit';

export interface TranscriptTurn {
  agent: string;
  text: string;
  /** Tokens the agent generated in this turn. */
  tokens: number;
  ended: TurnEnding;
  /** The text was cut to `maxTurnCharacters` (transcripts.ts) here (the turn itself was longer). */
  truncated?: true;
}

/** One episode as transcripts.jsonl records it. */
export interface Transcript {
  stage: number;
  problem: { id: string; prompt: string; answer: string };
  /** Which of the G episodes of its prompt this is. */
  sample: number;
  reward: number;
  correct: boolean;
  turns: TranscriptTurn[];
}
