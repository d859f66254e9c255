import { TeamtrError } from '../util/errors.js';

/**
 * What can go wrong talking to a Tinker service. Every error names the route
 * (`/api/v1/forward_backward`) and says what to do; none ever contains the API key.
 */
export class TinkerError extends TeamtrError {
  constructor(
    readonly route: string,
    detail: string,
  ) {
    super(`Tinker ${route}: ${detail}`);
  }
}

/** No API key in the environment (or the option). */
export class TinkerApiKeyError extends TinkerError {
  constructor(readonly variable: string) {
    super(
      '(client setup)',
      `no API key: set the environment variable ${variable} (for a local \`teamtr serve --tinker\` any value works, e.g. ${variable}=tml-local)`,
    );
  }
}

/**
 * The service stayed unreachable or overloaded through every allowed attempt: a dead server,
 * lost connections, timeouts, or a storm of 429/5xx answers.
 */
export class TinkerUnavailableError extends TinkerError {
  constructor(
    route: string,
    readonly lastReason: string,
    readonly attempts: number,
  ) {
    super(
      route,
      `${lastReason} (gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}; check that the service at baseURL is running, or raise maxRetries / retryDelayMs if it is only busy)`,
    );
  }
}

/** The service refused the request (a 4xx other than 408/429): retrying would not help. */
export class TinkerStatusError extends TinkerError {
  constructor(
    route: string,
    readonly status: number,
    readonly serverMessage: string,
    hint: string,
  ) {
    super(route, `refused with HTTP ${status}: ${serverMessage}${hint ? ` (${hint})` : ''}`);
  }
}

/** An answer that does not have the shape the protocol promises. */
export class TinkerResponseError extends TinkerError {
  constructor(route: string, detail: string) {
    super(
      route,
      `malformed response: ${detail} (is baseURL a Tinker service, and of a compatible version?)`,
    );
  }
}

/** The service ran the request and reports that it failed. */
export class TinkerRequestFailedError extends TinkerError {
  constructor(
    route: string,
    readonly requestId: string,
    readonly category: string,
    readonly serverMessage: string,
  ) {
    super(
      route,
      `request ${requestId} failed (${category} error): ${serverMessage}${category === 'user' ? ' — fix the request; retrying will not help' : ''}`,
    );
  }
}

/** A future's result did not arrive in time. */
export class TinkerTimeoutError extends TinkerError {
  constructor(
    route: string,
    readonly requestId: string,
    readonly seconds: number,
  ) {
    super(
      route,
      `no result for request ${requestId} within ${seconds} s (raise futureTimeoutMs if the service is slow or queued)`,
    );
  }
}

/** The service no longer holds the future (HTTP 410): the request must be sent again. */
export class TinkerFutureExpiredError extends TinkerError {
  constructor(
    route: string,
    readonly requestId: string,
  ) {
    super(route, `request ${requestId} expired on the service; send the request again`);
  }
}
