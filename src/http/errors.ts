import { TeamtrError } from '../util/errors.js';

/**
 * A request refused with an HTTP status and a message that says what to do. `details` carries
 * what a server's error format adds (the OpenAI format's `param` and `code`).
 */
export class HttpError extends TeamtrError {
  constructor(
    readonly status: number,
    message: string,
    readonly details: { param?: string | null; code?: string | null } = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** Whether `error` only says the client went away (nothing to answer, nothing to log). */
export function isClientGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return (
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code === 'ERR_STREAM_PREMATURE_CLOSE' ||
    (error as Error | null)?.message === 'aborted'
  );
}
