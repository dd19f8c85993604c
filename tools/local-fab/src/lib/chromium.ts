import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Chromium is missing and cannot be installed here (tests skip, or fail under REQUIRE_INFRA=1). */
export class ChromiumUnavailableError extends Error {
  override readonly name = 'ChromiumUnavailableError';
}

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** Flags for a headless Chromium in a container or CI (no sandbox user namespaces, no GPU). */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'];

export function findChromium(env: NodeJS.ProcessEnv = process.env): string | null {
  const own = env['CHROMIUM_BIN'];
  if (own && existsSync(own)) return own;
  return CANDIDATES.find((p) => existsSync(p)) ?? null;
}

/**
 * Debian's chromium: found, or installed with apt-get when missing and we are root on a Debian-like
 * system (as CI is). The browser build of playwright is never downloaded: playwright-core drives this one.
 */
export function ensureChromium(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): string {
  const found = findChromium();
  if (found) return found;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root || !existsSync('/usr/bin/apt-get')) {
    throw new ChromiumUnavailableError('chromium not found (Debian: apt-get install chromium; or set CHROMIUM_BIN)');
  }
  log('[local-fab] chromium not found: installing the Debian package chromium');
  try {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  } catch (err) {
    throw new ChromiumUnavailableError('apt-get install chromium failed', { cause: err });
  }
  const installed = findChromium();
  if (!installed) throw new ChromiumUnavailableError('chromium still not found after installing the package');
  return installed;
}
