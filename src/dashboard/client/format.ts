/** DOM and text helpers of the page: elements with text (never HTML), numbers, colours. */

export function el(tag: string, className?: string | null, text?: unknown): HTMLElement {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** The element with `id`, which the page (assets.ts) always has. */
export function byId(id: string): HTMLElement {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node;
}

/** A colour from the server only if it is a plain hex colour (it ends up in styles). */
export function safeColor(color: string | undefined): string {
  return color !== undefined && /^#[0-9a-fA-F]{6}$/.test(color) ? color : '#6b7280';
}

export function percent(value: number | null | undefined): string {
  return value === null || value === undefined || !isFinite(value)
    ? 'n/a'
    : `${(100 * value).toFixed(1)}%`;
}

export function number(value: number | null | undefined): string {
  if (value === null || value === undefined || !isFinite(value)) return 'n/a';
  if (value === 0) return '0';
  const magnitude = Math.abs(value);
  if (magnitude >= 1e4) return Math.round(value).toLocaleString('en-US');
  if (magnitude < 1e-3) return value.toExponential(2);
  return String(Number(value.toPrecision(3)));
}

function decimalsFor(step: number): number {
  for (let decimals = 0; decimals <= 12; decimals++) {
    const scaled = step * Math.pow(10, decimals);
    if (Math.abs(scaled - Math.round(scaled)) <= 1e-9 * scaled) return decimals;
  }
  return 12;
}

/** Axis labels in one style per axis (as the report's SVG axes): 5k, 0.25, 2.5e-7. */
export function tickLabels(splits: number[]): string[] {
  const step = splits.length > 1 ? Math.abs(splits[1]! - splits[0]!) : 1;
  const largest = Math.max(0, ...splits.map(Math.abs));
  const unit: [number, string] | null =
    largest >= 1e7 || (largest >= 1e6 && step >= 1e6)
      ? [1e6, 'M']
      : largest >= 1e4 || (largest >= 1e3 && step >= 1e3)
        ? [1e3, 'k']
        : null;
  return splits.map((value) => {
    if (value === 0 || step === 0) return value === 0 ? '0' : String(value);
    if (unit) return Number((value / unit[0]).toFixed(decimalsFor(step / unit[0]))) + unit[1];
    if (step < 1e-4) {
      const digits = Math.floor(Math.log10(Math.abs(value))) - Math.floor(Math.log10(step));
      return value.toExponential(Math.max(0, digits));
    }
    return value.toFixed(decimalsFor(step));
  });
}
