import type { HttpBindings } from '@hono/node-server';
import type { Context, MiddlewareHandler } from 'hono';
import type { z } from 'zod';
import { readRequestBody } from '../util/request-body.js';
import { parseOr } from '../util/schema.js';
import { HttpError } from './errors.js';

/**
 * The guards every teamtr HTTP server shares, as hono middleware and helpers: the Host check
 * that stops DNS rebinding, the content-type check that stops cross-site form posts, bounded
 * bodies, and request parsing that names the parameter it refuses (an unknown one included:
 * `max_token` is refused, not ignored).
 */

/** The hono environment of a teamtr server on Node: the raw request, and the error text. */
export interface NodeEnvironment {
  Bindings: HttpBindings;
  Variables: { errorText: string };
}

export type AppContext = Context<NodeEnvironment>;

/** Every value of header `name` as sent (Node keeps only the first Host in `headers`). */
function headerValues(rawHeaders: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let index = 0; index + 1 < rawHeaders.length; index += 2)
    if (rawHeaders[index]!.toLowerCase() === name) values.push(rawHeaders[index + 1]!);
  return values;
}

/**
 * Refuses a request with more than one Host header (400, as HTTP/1.1 requires) and, when
 * `allowedHosts()` gives a set (a loopback server), any Host not in it — missing and empty
 * ones included — with 421: a web page that rebinds its own name to 127.0.0.1 sends its name.
 */
export function hostGuard(
  allowedHosts: () => ReadonlySet<string> | null,
  remedy: string,
): MiddlewareHandler<NodeEnvironment> {
  return async (context, next) => {
    const hosts = headerValues(context.env.incoming.rawHeaders, 'host');
    if (hosts.length > 1)
      throw new HttpError(400, `the request has ${hosts.length} Host headers; send exactly one`);
    const allowed = allowedHosts();
    const host = (hosts[0] ?? '').toLowerCase();
    if (allowed && !allowed.has(host))
      throw new HttpError(
        421,
        `Host ${JSON.stringify(hosts[0] ?? '')} was refused (this server answers ${[...allowed][0]} and its other loopback names only, to block DNS rebinding); ${remedy}`,
      );
    await next();
  };
}

/** The media type of the request's body, lower case, without parameters ('' when absent). */
export function mediaType(context: AppContext): string {
  return (context.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * Refuses a body of another media type with 415. A cross-site form can post text/plain
 * without a preflight; JSON and protobuf need one, so a page elsewhere cannot send them.
 */
export function requireMediaType(context: AppContext, accepted: readonly string[]): void {
  const type = mediaType(context);
  if (!accepted.includes(type))
    throw new HttpError(
      415,
      `send the body as ${accepted.join(' or ')} with "content-type: ${accepted[0]}" (got ${JSON.stringify(type || 'none')})`,
    );
}

/** The whole body, refused with 413 as soon as it passes `maxBytes`. */
export function readBody(context: AppContext, maxBytes: number): Promise<Buffer> {
  return readRequestBody(context.env.incoming, maxBytes, (detail) => new HttpError(413, detail));
}

/** The body as JSON (415 for another type, 413 past `maxBytes`, 400 for broken JSON). */
export async function readJson(context: AppContext, maxBytes: number): Promise<unknown> {
  requireMediaType(context, ['application/json']);
  const text = (await readBody(context, maxBytes)).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `the body is not valid JSON (${(error as Error).message})`);
  }
}

/**
 * `body` checked against `schema`; the first problem becomes a 400 naming where it is. An
 * unknown key (a strict object's) is named with the keys that are known.
 */
export function parseRequest<Schema extends z.ZodType>(
  schema: Schema,
  body: unknown,
  where: string,
): z.output<Schema> {
  return parseOr(schema, body, ([issue]) => {
    const at = issue.path.join('.');
    if (issue.code === 'unrecognized_keys') {
      const prefix = at ? `${at}.` : '';
      return new HttpError(
        400,
        `${where}: unknown parameter${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `"${prefix}${key}"`).join(', ')}; check the spelling`,
        { param: `${prefix}${issue.keys[0]}` },
      );
    }
    return new HttpError(400, `${where}: ${at || 'body'}: ${issue.message}`, { param: at || null });
  });
}
