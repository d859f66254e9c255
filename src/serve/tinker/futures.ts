import { randomUUID } from 'node:crypto';
import { EngineUserError } from './local-losses.js';

/**
 * The Tinker API's futures: a long operation answers at once with a request id, runs in
 * arrival order (one at a time), and its outcome is fetched by `retrieve_future`. What the
 * server remembers is bounded whatever clients do: an outcome is forgotten `retrievedGraceMs`
 * after it was first retrieved (a retried retrieve still finds it) or `ttlMs` after it was
 * created, and at most `maxEntries` are kept (the oldest go first). Request ids carry this
 * server run's tag and a counter, so an id that was pruned is told apart from one never issued
 * (410 Gone, which the SDK answers by sending the request again, versus 404).
 */

export type Outcome =
  | { kind: 'json'; body: unknown }
  | { kind: 'protobuf'; bytes: Uint8Array }
  | { kind: 'failed'; error: string; category: 'user' | 'server' };

export interface FutureStoreOptions {
  /** @default 15 minutes */
  ttlMs?: number;
  /** @default 60 s */
  retrievedGraceMs?: number;
  /** @default 10_000 */
  maxEntries?: number;
  /** @default Date.now */
  now?: () => number;
  /** Told of every operation that failed (the server logs it: the client sees it only later). */
  onFailure?: (requestId: string, error: string, category: 'user' | 'server') => void;
}

interface Entry {
  outcome: Promise<Outcome>;
  createdAt: number;
  retrievedAt: number | null;
}

export type Lookup =
  { state: 'unknown' } | { state: 'expired' } | { state: 'found'; outcome: Promise<Outcome> };

export class FutureStore {
  private readonly entries = new Map<string, Entry>();
  /** Ids in the order they were first retrieved (their grace ends in the same order). */
  private readonly retrieved = new Map<string, number>();
  private readonly tag = randomUUID().slice(0, 8);
  private issued = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly now: () => number;

  constructor(private readonly options: FutureStoreOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /** Queues `work` behind every earlier operation; its request id. */
  enqueue(work: () => Promise<Outcome> | Outcome): string {
    this.prune();
    const requestId = `${this.tag}-${this.issued++}`;
    const outcome = this.queue.then(work).catch((error: unknown): Outcome => {
      const category = error instanceof EngineUserError ? 'user' : 'server';
      this.options.onFailure?.(requestId, (error as Error).message, category);
      return { kind: 'failed', error: (error as Error).message, category };
    });
    this.queue = outcome;
    this.entries.set(requestId, { outcome, createdAt: this.now(), retrievedAt: null });
    return requestId;
  }

  lookup(requestId: string): Lookup {
    this.prune();
    const entry = this.entries.get(requestId);
    if (entry) return { state: 'found', outcome: entry.outcome };
    const [tag, count] = requestId.split('-');
    return tag === this.tag && Number(count) < this.issued
      ? { state: 'expired' }
      : { state: 'unknown' };
  }

  /** Marks a finished future as retrieved: it is forgotten after the grace period. */
  retrievedOnce(requestId: string): void {
    const entry = this.entries.get(requestId);
    if (!entry || entry.retrievedAt !== null) return;
    entry.retrievedAt = this.now();
    this.retrieved.set(requestId, entry.retrievedAt);
  }

  private prune(): void {
    const now = this.now();
    const grace = this.options.retrievedGraceMs ?? 60_000;
    for (const [requestId, retrievedAt] of this.retrieved) {
      if (retrievedAt + grace > now) break;
      this.forget(requestId);
    }
    const ttl = this.options.ttlMs ?? 15 * 60_000;
    const maxEntries = this.options.maxEntries ?? 10_000;
    for (const [requestId, entry] of this.entries) {
      if (entry.createdAt + ttl > now && this.entries.size <= maxEntries) break;
      this.forget(requestId);
    }
  }

  private forget(requestId: string): void {
    this.entries.delete(requestId);
    this.retrieved.delete(requestId);
  }

  /** How many futures are remembered (for the memory bound's tests). */
  get size(): number {
    return this.entries.size;
  }
}

/**
 * Answers to requests sent with an X-Idempotency-Key, so a retried request gets the first
 * answer rather than running twice; forgotten after `ttlMs`, at most `maxEntries` kept.
 */
export class IdempotencyCache<Answer> {
  private readonly answers = new Map<string, { answer: Answer; at: number }>();
  private readonly now: () => number;

  constructor(private readonly options: Omit<FutureStoreOptions, 'retrievedGraceMs'> = {}) {
    this.now = options.now ?? Date.now;
  }

  get(key: string): Answer | undefined {
    this.prune();
    return this.answers.get(key)?.answer;
  }

  set(key: string, answer: Answer): void {
    this.answers.set(key, { answer, at: this.now() });
    this.prune();
  }

  private prune(): void {
    const now = this.now();
    const ttl = this.options.ttlMs ?? 15 * 60_000;
    const maxEntries = this.options.maxEntries ?? 10_000;
    for (const [key, { at }] of this.answers) {
      if (at + ttl > now && this.answers.size <= maxEntries) break;
      this.answers.delete(key);
    }
  }

  get size(): number {
    return this.answers.size;
  }
}
