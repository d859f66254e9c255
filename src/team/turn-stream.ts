import type { TurnDecoder } from './policy.js';

/**
 * Text that arrives token by token, emitted in pieces that concatenate to the final text: a
 * piece never ends inside a multi-byte character (a trailing U+FFFD is held back) nor inside a
 * string that could still become a stop string.
 */

/** Where the earliest stop string starts in `text`, or -1. */
export function firstStop(text: string, stopStrings: readonly string[]): number {
  let earliest = -1;
  for (const stop of stopStrings) {
    const at = text.indexOf(stop);
    if (at >= 0 && (earliest < 0 || at < earliest)) earliest = at;
  }
  return earliest;
}

/** How much of `text` may be emitted: not a partial character, nor a possible stop's start. */
export function streamableLength(text: string, stopStrings: readonly string[]): number {
  let end = text.length;
  while (end > 0 && text[end - 1] === '\ufffd') end--;
  for (const stop of stopStrings) {
    for (let length = Math.min(stop.length - 1, end); length > 0; length--) {
      if (text.endsWith(stop.slice(0, length), end)) {
        end -= length;
        break;
      }
    }
  }
  return Math.max(0, end);
}

/** A token drawn for the turn. */
export interface StreamedToken {
  token: number;
  logProb: number;
}

/**
 * One agent's turn as its tokens are drawn: the text TurnDecoder gives the finished turn (a
 * plain model's line, a chat model's text without its end-of-turn token, cut before the first
 * stop string), in pieces as it grows. Each piece carries the tokens consumed since the one
 * before, so the pieces hold every kept token exactly once; tokens drawn after a stop string
 * completed are not part of the turn and are dropped.
 */
export class TurnTextStream {
  private readonly tokens: number[] = [];
  private pending: StreamedToken[] = [];
  private emitted = 0;
  private ended = false;

  constructor(
    private readonly decoder: TurnDecoder,
    private readonly stop: readonly string[],
    private readonly onPiece: (text: string, tokens: readonly StreamedToken[]) => void,
  ) {}

  push(drawn: StreamedToken): void {
    if (this.ended) return;
    this.tokens.push(drawn.token);
    this.pending.push(drawn);
    const text = this.decoder.text(this.tokens);
    const stopAt = firstStop(text, this.stop);
    if (stopAt >= 0) this.ended = true;
    const end = stopAt >= 0 ? stopAt : streamableLength(text, this.stop);
    if (end > this.emitted || this.ended)
      this.emit(text.slice(this.emitted, Math.max(end, this.emitted)), end);
  }

  /** The finished turn's text: emits what was held back (and any tokens not yet reported). */
  finish(text: string): void {
    if (text.length > this.emitted || this.pending.length > 0)
      this.emit(text.slice(this.emitted), text.length);
    this.ended = true;
  }

  private emit(piece: string, end: number): void {
    const tokens = this.pending;
    this.pending = [];
    this.emitted = Math.max(this.emitted, end);
    this.onPiece(piece, tokens);
  }
}
