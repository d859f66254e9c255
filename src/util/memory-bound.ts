import os from 'node:os';
import { TeamtrError } from './errors.js';
import { formatBytes, limitOf, memoryBoundBytes } from './limits.js';

/** The most elements one typed array may hold in this V8. */
export const maxTypedArrayElements = 2 ** 32;

/** An allocation sized by input, described for the error that refuses it. */
export interface AllocationRequest {
  /** What is being allocated, e.g. `tensor "embed.weight" [4000000, 1024]`. */
  what: string;
  bytes: number;
  /** Elements of the largest single array it needs (checked against the typed-array limit). */
  largestArrayElements?: number;
  /** The file or setting whose size it is, prefixed to the message. */
  source?: string;
  /** What the user can do instead, e.g. "lower rollout.problemsPerBatch". */
  remedy: string;
}

/**
 * Refuses, before anything is allocated, an allocation whose size comes from input and cannot
 * fit in this machine's memory bound (TEAMTR_MEMORY_SHARE of it) or in one typed array: a clear
 * error naming the source and the figure, where the allocation itself would die with
 * "Invalid typed array length" deep inside, or swap the machine for minutes.
 */
export function checkAllocation(request: AllocationRequest): void {
  const prefix = request.source ? `${request.source}: ` : '';
  const elements = request.largestArrayElements ?? 0;
  if (!Number.isFinite(request.bytes) || !Number.isFinite(elements))
    throw new TeamtrError(
      `${prefix}${request.what} has a size that is not a finite number; ${request.remedy}`,
    );
  if (elements > maxTypedArrayElements)
    throw new TeamtrError(
      `${prefix}${request.what} needs one array of ${elements.toLocaleString('en-US')} elements, more than one array can hold (${maxTypedArrayElements.toLocaleString('en-US')}); ${request.remedy}`,
    );
  const bound = memoryBoundBytes();
  if (request.bytes <= bound) return;
  throw new TeamtrError(
    `${prefix}${request.what} needs ${formatBytes(request.bytes)}, more than ${Math.round(limitOf('memoryShare') * 100)}% of this machine's ${formatBytes(os.totalmem())} (TEAMTR_MEMORY_SHARE sets the share); ${request.remedy}`,
  );
}

/** Whether an allocation of `bytes` fits the bound (for planners that can do without it). */
export function fitsMemoryBound(bytes: number, largestArrayElements = 0): boolean {
  return (
    Number.isFinite(bytes) &&
    bytes <= memoryBoundBytes() &&
    largestArrayElements <= maxTypedArrayElements
  );
}
