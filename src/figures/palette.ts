/**
 * Series colors: a qualitative palette that stays distinguishable for the common forms of color
 * blindness and in grayscale print (Okabe–Ito, extended with a few muted tones).
 */
export const seriesPalette = [
  '#0072b2',
  '#e69f00',
  '#009e73',
  '#cc79a7',
  '#d55e00',
  '#56b4e9',
  '#7f6d00',
  '#8c6bb1',
  '#4d4d4d',
  '#b2182b',
] as const;

/** Reference lines (δ, noise thresholds). */
export const referenceColor = '#6b7280';
/** Points flagged as bad (regressions). */
export const alertColor = '#c0392b';

export function paletteColor(index: number): string {
  return seriesPalette[
    ((index % seriesPalette.length) + seriesPalette.length) % seriesPalette.length
  ]!;
}

/** Mixes a hex color with white (amount > 0) or black (amount < 0); amount in [−1, 1]. */
export function shade(color: string, amount: number): string {
  const match = /^#([0-9a-f]{6})$/i.exec(color);
  if (!match) return color;
  const value = Number.parseInt(match[1]!, 16);
  const target = amount >= 0 ? 255 : 0;
  const weight = Math.min(1, Math.abs(amount));
  const channel = (shift: number): string => {
    const original = (value >> shift) & 0xff;
    return Math.round(original + (target - original) * weight)
      .toString(16)
      .padStart(2, '0');
  };
  return `#${channel(16)}${channel(8)}${channel(0)}`;
}
