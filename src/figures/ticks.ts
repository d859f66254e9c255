/**
 * Axis scales for charts: "nice" bounds and tick steps (1, 2, 2.5 or 5 times a power of ten)
 * and tick labels short enough for an axis (1.5k, 2M, 3e-7).
 */

export interface NiceScale {
  min: number;
  max: number;
  step: number;
  /** From min to max inclusive, every step. */
  ticks: number[];
}

/** The nice step closest above span / targetCount. */
export function niceStep(span: number, targetCount: number): number {
  const raw = span / Math.max(1, targetCount);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const residual = raw / magnitude;
  const factor =
    residual <= 1 ? 1 : residual <= 2 ? 2 : residual <= 2.5 ? 2.5 : residual <= 5 ? 5 : 10;
  return factor * magnitude;
}

/** Decimal places that show every multiple of `step` exactly. */
export function decimalsFor(step: number): number {
  if (!(step > 0) || !Number.isFinite(step)) return 0;
  for (let decimals = 0; decimals <= 20; decimals++) {
    const scaled = step * 10 ** decimals;
    if (Math.abs(scaled - Math.round(scaled)) <= 1e-9 * scaled) return decimals;
  }
  return 20;
}

/**
 * A scale covering [min, max] with about targetTicks ticks. An empty or degenerate range is
 * widened (a constant series still gets an axis), non-finite bounds give 0..1.
 */
export function niceScale({
  min,
  max,
  targetTicks = 5,
}: {
  min: number;
  max: number;
  targetTicks?: number;
}): NiceScale {
  let low = Math.min(min, max);
  let high = Math.max(min, max);
  if (!Number.isFinite(low) || !Number.isFinite(high)) {
    low = 0;
    high = 1;
  }
  // A span below double precision at this magnitude is a constant: its ticks could not be told apart.
  if (high - low <= 1e-12 * Math.max(Math.abs(low), Math.abs(high))) {
    const middle = (low + high) / 2;
    low = middle;
    high = middle;
  }
  if (low === high) {
    const pad = low === 0 ? 1 : Math.abs(low) * 0.1;
    low -= pad;
    high += pad;
  }
  const step = niceStep(high - low, targetTicks);
  const decimals = decimalsFor(step);
  let first = Math.floor(low / step + 1e-9);
  let last = Math.ceil(high / step - 1e-9);
  // Far from zero the quotient itself rounds (999,999.9999999999 / 2.5e-6 is 4e11 exactly): a
  // bound that then misses the data by more than a millionth of a step gets one more tick.
  const tolerance = 1e-6 * step;
  if (roundTo(first * step, decimals) > low + tolerance) first--;
  if (roundTo(last * step, decimals) < high - tolerance) last++;
  const ticks: number[] = [];
  for (let index = first; index <= last; index++) ticks.push(roundTo(index * step, decimals));
  return { min: ticks[0]!, max: ticks[ticks.length - 1]!, step, ticks };
}

function roundTo(value: number, decimals: number): number {
  const rounded = Number(value.toFixed(Math.min(decimals + 1, 100)));
  return Object.is(rounded, -0) ? 0 : rounded;
}

const suffixes = [
  { scale: 1e9, suffix: 'G' },
  { scale: 1e6, suffix: 'M' },
  { scale: 1e3, suffix: 'k' },
] as const;

/**
 * Labels of an axis's ticks, exact for multiples of `step`. One style per axis: thousands or
 * millions get a k/M/G suffix chosen by the largest tick, steps below 1e-4 use exponents.
 */
export function formatTicks(ticks: readonly number[], step: number): string[] {
  const largest = Math.max(0, ...ticks.map((tick) => Math.abs(tick)));
  const unit = suffixes.find(
    ({ scale }) => largest >= 10 * scale || (largest >= scale && step >= scale),
  );
  const stepExponent = Math.floor(Math.log10(step));
  // Significant digits down to the step's last digit: 2.5e-7 steps need one more than 2e-7.
  const stepDigits = decimalsFor(step / 10 ** stepExponent);
  return ticks.map((value) => {
    if (value === 0) return '0';
    if (unit)
      return typographicMinus(
        `${trimZeros((value / unit.scale).toFixed(decimalsFor(step / unit.scale)))}${unit.suffix}`,
      );
    if (step < 1e-4) {
      const digits = Math.floor(Math.log10(Math.abs(value))) - stepExponent + stepDigits;
      return typographicMinus(value.toExponential(Math.min(Math.max(digits, 0), 15)));
    }
    return typographicMinus(value.toFixed(decimalsFor(step)));
  });
}

function typographicMinus(text: string): string {
  return text.replace(/-/g, '\u2212');
}

function trimZeros(text: string): string {
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

/** A value for a note or a tooltip: 3 significant digits, never "NaN". */
export function formatValue(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return 'n/a';
  if (value === 0) return '0';
  const magnitude = Math.abs(value);
  if (magnitude >= 1e4) return Math.round(value).toLocaleString('en-US');
  if (magnitude < 1e-3) return value.toExponential(digits - 1);
  return Number(value.toPrecision(digits)).toString();
}

/** A fraction as a percentage with one decimal. */
export function formatPercent(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return 'n/a';
  return `${(100 * value).toFixed(1)}%`;
}
