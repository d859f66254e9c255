/**
 * The runs' configs side by side: one row per setting (a dotted path such as
 * `trustRegion.delta`), one column per run, with the rows where runs differ marked.
 */

export interface ConfigRow {
  key: string;
  /** One per run; null where the run's config does not have the key. */
  values: Array<string | null>;
  differs: boolean;
}

/** Leaf values of a JSON value by dotted path; arrays of scalars stay one value. */
export function flattenConfig(value: unknown, prefix = ''): Map<string, string> {
  const leaves = new Map<string, string>();
  const visit = (node: unknown, key: string): void => {
    if (Array.isArray(node)) {
      if (node.every((item) => item === null || typeof item !== 'object')) {
        leaves.set(key, JSON.stringify(node));
        return;
      }
      node.forEach((item, index) => visit(item, `${key}[${index}]`));
      return;
    }
    if (node !== null && typeof node === 'object') {
      const entries = Object.entries(node as Record<string, unknown>);
      if (entries.length === 0 && key) leaves.set(key, '{}');
      for (const [child, childValue] of entries) visit(childValue, key ? `${key}.${child}` : child);
      return;
    }
    leaves.set(key, typeof node === 'string' ? node : JSON.stringify(node));
  };
  visit(value, prefix);
  return leaves;
}

export function configTable(configs: readonly unknown[]): ConfigRow[] {
  const flattened = configs.map((config) => flattenConfig(config ?? {}));
  const keys: string[] = [];
  for (const leaves of flattened)
    for (const key of leaves.keys()) if (!keys.includes(key)) keys.push(key);
  return keys.map((key) => {
    const values = flattened.map((leaves) => leaves.get(key) ?? null);
    return { key, values, differs: values.some((value) => value !== values[0]) };
  });
}
