/**
 * The largest and smallest of a list by a key, with loops: `Math.max(...values)` passes every
 * value as a call argument, and past about 100,000 of them (a rollout of 100,000 problems ×
 * 2 samples) the call overflows the stack. Like Math.max, a NaN key makes the result NaN and
 * +0 is larger than −0; an empty list gives `empty`.
 */
export function largest<Item>(
  items: readonly Item[],
  key: (item: Item) => number,
  empty = -Infinity,
): number {
  if (items.length === 0) return empty;
  let best = -Infinity;
  for (const item of items) {
    const value = key(item);
    if (Number.isNaN(value)) return Number.NaN;
    // As Math.max: +0 is larger than −0.
    if (value > best || (value === 0 && Object.is(best, -0))) best = value;
  }
  return best;
}

export function smallest<Item>(
  items: readonly Item[],
  key: (item: Item) => number,
  empty = Infinity,
): number {
  return -largest(items, (item) => -key(item), -empty);
}
