import { ShapeError } from '../util/errors.js';
import { formatShape } from '../util/named-array.js';

/**
 * Checks a set of loaded tensors against the names and shapes a model expects, reporting every
 * difference at once (by name) rather than failing on the first.
 */

export interface MisshapenTensor {
  name: string;
  expected: number[];
  actual: number[];
}

export interface TensorSetComparison {
  /** Expected but not loaded. */
  missing: string[];
  /** Loaded but not expected. */
  unexpected: string[];
  misshapen: MisshapenTensor[];
}

/** Loaded tensors as a list (`loadCheckpoint`) or a map (`readSafetensors`). */
export type LoadedShapes =
  | readonly { name: string; shape: readonly number[] }[]
  | ReadonlyMap<string, { shape: readonly number[] }>;

/** A loaded tensor set that does not match what the model expects; fields list the differences. */
export class TensorSetMismatchError extends ShapeError {
  constructor(
    readonly source: string,
    readonly comparison: TensorSetComparison,
  ) {
    super(`${source}: tensors do not match the model\n${describeComparison(comparison)}`);
  }
}

export function compareShapes(
  loaded: LoadedShapes,
  expected: ReadonlyMap<string, readonly number[]>,
): TensorSetComparison {
  const actual = new Map<string, readonly number[]>(
    loaded instanceof Map
      ? [...loaded].map(([name, tensor]) => [name, tensor.shape])
      : (loaded as readonly { name: string; shape: readonly number[] }[]).map((tensor) => [
          tensor.name,
          tensor.shape,
        ]),
  );
  const comparison: TensorSetComparison = { missing: [], unexpected: [], misshapen: [] };
  for (const [name, shape] of expected) {
    const actualShape = actual.get(name);
    if (!actualShape) comparison.missing.push(name);
    else if (!sameShape(shape, actualShape)) {
      comparison.misshapen.push({ name, expected: [...shape], actual: [...actualShape] });
    }
  }
  for (const name of actual.keys()) if (!expected.has(name)) comparison.unexpected.push(name);
  return comparison;
}

/** Throws a TensorSetMismatchError naming every missing, unexpected and misshapen tensor. */
export function expectShapes(
  loaded: LoadedShapes,
  expected: ReadonlyMap<string, readonly number[]>,
  source: string,
): void {
  const comparison = compareShapes(loaded, expected);
  const differences =
    comparison.missing.length + comparison.unexpected.length + comparison.misshapen.length;
  if (differences > 0) throw new TensorSetMismatchError(source, comparison);
}

function sameShape(left: readonly number[], right: readonly number[]): boolean {
  return left.length === right.length && left.every((size, index) => size === right[index]);
}

const listedPerKind = 10;

function describeComparison(comparison: TensorSetComparison): string {
  const lines: string[] = [];
  const listed = (items: string[]) => {
    const shown = items.slice(0, listedPerKind).join(', ');
    return items.length > listedPerKind
      ? `${shown}, ... and ${items.length - listedPerKind} more`
      : shown;
  };
  if (comparison.missing.length > 0) {
    lines.push(`  missing (${comparison.missing.length}): ${listed(comparison.missing)}`);
  }
  if (comparison.unexpected.length > 0) {
    lines.push(`  unexpected (${comparison.unexpected.length}): ${listed(comparison.unexpected)}`);
  }
  if (comparison.misshapen.length > 0) {
    const described = comparison.misshapen.map(
      (item) =>
        `${item.name} is ${formatShape(item.actual)}, expected ${formatShape(item.expected)}`,
    );
    lines.push(`  wrong shape (${comparison.misshapen.length}): ${listed(described)}`);
  }
  lines.push('  (was the checkpoint saved from a model with a different config?)');
  return lines.join('\n');
}
