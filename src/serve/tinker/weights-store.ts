import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { EngineUserError } from './local-losses.js';
import {
  readWeightsFile,
  readWeightsHeader,
  writeWeightsFile,
  type WeightsAbout,
  type WeightsSnapshot,
} from './weights-file.js';

/**
 * The checkpoints saved by `save_weights` / `save_weights_for_sampler`, by `tinker://` path:
 * in memory, or with a state directory on disk (one file each, indexed from their headers at
 * start, so a restarted server still lists and loads them) with the most recently used kept in
 * memory too. Bounded: all checkpoints together may hold at most `maxBytes` (a save past it is
 * refused, saying how to free room), a checkpoint with a TTL is gone once it expires, and the
 * unnamed checkpoints of `save_weights_and_get_sampling_client` are memory only, the latest
 * `maxEphemeral` kept.
 */

export interface SavedCheckpoint extends WeightsAbout {
  path: string;
  modelId: string;
  /** Its name in the path, after the kind: `tinker://<model>/<kind>/<name>`. */
  name: string;
  bytes: number;
  ephemeral: boolean;
}

export interface WeightsStoreOptions {
  directory?: string;
  /** @default 4 GiB */
  maxBytes?: number;
  /** Memory for snapshots that also live on disk. @default 256 MiB */
  cacheBytes?: number;
  /** @default 8 */
  maxEphemeral?: number;
  /** @default Date.now */
  now?: () => number;
}

export function snapshotBytes(snapshot: WeightsSnapshot): number {
  const parameters = snapshot.parameters.reduce((sum, values) => sum + values.byteLength, 0);
  const moments = snapshot.optimizer.moments.reduce((sum, { data }) => sum + data.byteLength, 0);
  return parameters + moments;
}

export class WeightsStore {
  private readonly entries = new Map<string, SavedCheckpoint>();
  /** Snapshots in memory, least recently used first. */
  private readonly cache = new Map<string, WeightsSnapshot>();
  private cachedBytes = 0;
  private storedBytes = 0;
  readonly maxBytes: number;
  private readonly now: () => number;

  constructor(private readonly options: WeightsStoreOptions = {}) {
    this.maxBytes = options.maxBytes ?? 4 * 1024 ** 3;
    this.now = options.now ?? Date.now;
    if (options.directory) {
      mkdirSync(options.directory, { recursive: true });
      this.indexDirectory(options.directory);
    }
  }

  private indexDirectory(directory: string): void {
    for (const name of readdirSync(directory)) {
      if (!name.endsWith('.weights')) continue;
      const header = readWeightsHeader(path.join(directory, name));
      // Files of older versions say nothing about themselves: loadable, not listed.
      const about = header.about ?? {
        kind: header.path.includes('/sampler_weights/') ? 'sampler_weights' : 'weights',
        baseModel: '',
        lora: { rank: 1 },
        createdAt: 0,
        expiresAt: null,
      };
      this.remember({
        ...about,
        path: header.path,
        modelId: header.modelId,
        name: header.path.split('/').slice(4).join('/'),
        bytes: header.bytes,
        ephemeral: false,
      });
    }
  }

  private remember(entry: SavedCheckpoint): void {
    this.entries.set(entry.path, entry);
    if (!entry.ephemeral) this.storedBytes += entry.bytes;
  }

  private file(weightsPath: string): string {
    const digest = createHash('sha256').update(weightsPath).digest('hex').slice(0, 32);
    return path.join(this.options.directory!, `${digest}.weights`);
  }

  private expired(entry: SavedCheckpoint): boolean {
    return entry.expiresAt !== null && entry.expiresAt <= this.now();
  }

  /** Forgets `weightsPath` and frees its memory and disk. */
  delete(weightsPath: string): boolean {
    const entry = this.entries.get(weightsPath);
    if (!entry) return false;
    this.entries.delete(weightsPath);
    if (!entry.ephemeral) this.storedBytes -= entry.bytes;
    this.uncache(weightsPath);
    if (this.options.directory && !entry.ephemeral) rmSync(this.file(weightsPath), { force: true });
    return true;
  }

  private uncache(weightsPath: string): void {
    const snapshot = this.cache.get(weightsPath);
    if (!snapshot) return;
    this.cache.delete(weightsPath);
    this.cachedBytes -= snapshotBytes(snapshot);
  }

  private deleteExpired(): void {
    for (const entry of [...this.entries.values()])
      if (this.expired(entry)) this.delete(entry.path);
  }

  has(weightsPath: string): boolean {
    const entry = this.entries.get(weightsPath);
    return entry !== undefined && !this.expired(entry);
  }

  save(
    entry: Omit<SavedCheckpoint, 'bytes'>,
    snapshot: WeightsSnapshot,
    options: { overwrite: boolean },
  ): SavedCheckpoint {
    this.deleteExpired();
    const bytes = snapshotBytes(snapshot);
    const existing = this.entries.get(entry.path);
    if (existing && !options.overwrite)
      throw new EngineUserError(
        `"${entry.path}" exists already; save under another name or pass overwrite=True`,
      );
    const freed = existing && !existing.ephemeral ? existing.bytes : 0;
    if (!entry.ephemeral && this.storedBytes - freed + bytes > this.maxBytes)
      throw new EngineUserError(
        `saving "${entry.path}" (${bytes} bytes) would pass the server's limit of ${this.maxBytes} bytes of saved weights (${this.storedBytes} held); delete checkpoints (RestClient.delete_checkpoint), save with ttl_seconds, or restart the server with a larger --max-saved-bytes`,
      );
    if (existing) this.delete(entry.path);
    const saved = { ...entry, bytes };
    if (this.options.directory && !entry.ephemeral)
      writeWeightsFile(this.file(entry.path), entry.path, snapshot, aboutOf(saved));
    this.remember(saved);
    this.keepInMemory(entry.path, snapshot, !this.options.directory || entry.ephemeral);
    if (entry.ephemeral) this.dropOldEphemeral();
    return saved;
  }

  private keepInMemory(weightsPath: string, snapshot: WeightsSnapshot, onlyCopy: boolean): void {
    this.cache.set(weightsPath, snapshot);
    this.cachedBytes += snapshotBytes(snapshot);
    if (onlyCopy) return;
    const limit = this.options.cacheBytes ?? 256 * 1024 ** 2;
    for (const [cachedPath] of this.cache) {
      if (this.cachedBytes <= limit) break;
      const entry = this.entries.get(cachedPath);
      // Only snapshots that are also on disk can leave memory.
      if (entry && !entry.ephemeral && this.options.directory) this.uncache(cachedPath);
    }
  }

  private dropOldEphemeral(): void {
    const ephemeral = [...this.entries.values()].filter((entry) => entry.ephemeral);
    const excess = ephemeral.length - (this.options.maxEphemeral ?? 8);
    for (const entry of ephemeral.slice(0, Math.max(0, excess))) this.delete(entry.path);
  }

  /** What is saved at `weightsPath` (not its numbers); a clear error if gone. */
  entry(weightsPath: string): SavedCheckpoint {
    const entry = this.entries.get(weightsPath);
    if (entry && this.expired(entry)) {
      this.delete(weightsPath);
      throw new EngineUserError(`"${weightsPath}" has expired (it was saved with ttl_seconds)`);
    }
    if (!entry)
      throw new EngineUserError(
        `no saved weights at "${weightsPath}" (paths come from save_weights / save_weights_for_sampler of this server${this.options.directory ? ` or, kept in ${this.options.directory}, of its earlier runs` : ' run; start it with --state-dir to keep them across restarts'}; the unnamed weights of save_weights_and_get_sampling_client are kept for its ${this.options.maxEphemeral ?? 8} latest calls)`,
      );
    return entry;
  }

  /** The checkpoint at `weightsPath` and its numbers; a clear error if gone. */
  load(weightsPath: string): { entry: SavedCheckpoint; snapshot: WeightsSnapshot } {
    const entry = this.entry(weightsPath);
    const cached = this.cache.get(weightsPath);
    if (cached) {
      // Most recently used last.
      this.cache.delete(weightsPath);
      this.cache.set(weightsPath, cached);
      return { entry, snapshot: cached };
    }
    const snapshot = readWeightsFile(this.file(weightsPath), weightsPath);
    this.keepInMemory(weightsPath, snapshot, false);
    return { entry, snapshot };
  }

  /** Checkpoints (named ones; not expired), oldest first; of one model when given. */
  list(modelId?: string): SavedCheckpoint[] {
    this.deleteExpired();
    return [...this.entries.values()]
      .filter((entry) => !entry.ephemeral && (modelId === undefined || entry.modelId === modelId))
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** Bytes held, for the memory bound's tests. */
  get usage() {
    return { stored: this.storedBytes, cached: this.cachedBytes, entries: this.entries.size };
  }
}

function aboutOf(entry: SavedCheckpoint): WeightsAbout {
  return {
    kind: entry.kind,
    baseModel: entry.baseModel,
    lora: entry.lora,
    createdAt: entry.createdAt,
    expiresAt: entry.expiresAt,
  };
}
