/** Everything in `html` that would make a browser fetch something. */
export function externalReferences(html: string): string[] {
  const found: string[] = [];
  for (const match of html.matchAll(
    /\b(?:src|href|srcset|action|poster|data)\s*=\s*["']?([^"'\s>]+)/gi,
  ))
    found.push(match[0]);
  for (const match of html.matchAll(/url\(\s*['"]?([^)'"]+)/gi))
    if (!match[1]!.startsWith('#')) found.push(match[0]);
  for (const match of html.matchAll(/@import|<script|<link|<iframe|<img/gi)) found.push(match[0]);
  return found;
}
