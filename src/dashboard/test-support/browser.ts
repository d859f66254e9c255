import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/**
 * Headless Chromium for end-to-end tests: Debian's `chromium` package driven by playwright-core
 * (no browser download), with a fresh profile per launch and background networking off.
 */

export const chromiumPath = '/usr/bin/chromium';

const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const installHint = `Chromium is not installed at ${chromiumPath}; install it with \`apt-get install -y chromium\``;

/**
 * Why browser tests are skipped here, or null when they must run. Without Chromium they are
 * skipped on a developer machine (with this reason) but not in CI (CI=true), where
 * `launchChromium` then fails saying what to install: a skip there would hide them.
 */
export function browserSkipReason(): string | null {
  if (existsSync(chromiumPath) || process.env.CI === 'true') return null;
  return `${installHint}; browser tests are skipped outside CI`;
}

export interface LaunchedBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<LaunchedBrowser> {
  if (!existsSync(chromiumPath))
    throw new Error(`${installHint} (browser tests must run when CI=true)`);
  const profile = mkdtempSync(path.join(tmpdir(), 'teamtr-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: chromiumArgs,
      viewport: { width: 1400, height: 1000 },
      timeout: 60_000,
    });
    return {
      context,
      close: async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
