/** The small pieces every part of the SVG renderer writes: escaped text, numbers, the colours. */

export const font = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";
export const textColor = '#1f2937';
export const mutedColor = '#6b7280';
export const gridColor = '#e5e7eb';
export const axisColor = '#9ca3af';
/** Opacity of a shaded interval band: the line stays readable through it. */
export const bandOpacity = 0.2;
/** Rough advance of a 12 px sans-serif glyph, for layout without measuring text. */
export const glyphWidth = 6.3;

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A number for an SVG attribute: two decimals are sub-pixel accurate and keep files small. */
export function px(value: number): string {
  return String(Math.round(value * 100) / 100);
}

/** A safe fragment for element ids (figure ids become part of clip-path ids). */
export function idFragment(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '-');
}
