import type { z } from 'zod';
import { parseOr } from '../util/schema.js';
import { TinkerResponseError } from './errors.js';

/** What a model or sampler handle needs of its client: plain calls and calls that return futures. */
export interface TinkerConnection {
  /** POSTs JSON and validates the (non-future) answer. */
  post<Schema extends z.ZodType>(
    route: string,
    body: unknown,
    schema: Schema,
  ): Promise<z.output<Schema>>;
  /** Sends a request that answers with a future, and waits for the future's result. */
  submit(
    route: string,
    body: { json?: unknown; protobuf?: Uint8Array },
    kind: FutureResultKind,
  ): Promise<unknown>;
}

/** How a future's result travels: JSON, or protobuf for forward/backward outputs and samples. */
export type FutureResultKind = 'json' | 'forwardBackward' | 'sample';

/** `value` checked against `schema`; a mismatch is a TinkerResponseError naming the field. */
export function checkJson<Schema extends z.ZodType>(
  route: string,
  value: unknown,
  schema: Schema,
): z.output<Schema> {
  return parseOr(
    schema,
    value,
    ([issue]) =>
      new TinkerResponseError(route, `${issue.path.join('.') || 'the body'}: ${issue.message}`),
  );
}
