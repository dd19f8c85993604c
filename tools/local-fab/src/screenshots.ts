/**
 * Regenerates the dashboard screenshots in docs/images/ from a real local fab:
 *   tools/local-fab/screenshots.sh   (after building the apps)
 * Starts the small fab, runs the simulator at full speed, crashes a defender, and photographs the
 * cluster view and the chamber with the most alarms in headless Chromium.
 */
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { waitFor } from '@defender/infra-harness';
import { CHROMIUM_ARGS, ensureChromium } from './lib/chromium';
import { LocalFab } from './lib/local-fab';
import { REPO } from './lib/processes';

async function main(): Promise<void> {
  const exe = ensureChromium();
  const fab = new LocalFab({ defenders: 3, seedFab: ['--size', 'small'], dashboardPort: 0, keepRunDir: false, terminal: false });
  try {
    await fab.start();
    const sim = fab.startSimulator('run', ['--no-seed', '--size', 'small', '--runs', '34', '--speed', 'max', '--excursion-after', '22', '--progress', 'plain']);
    await sim.exited;
    const browser = await chromium.launch({ executablePath: exe, args: CHROMIUM_ARGS });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, deviceScaleFactor: 1 });
    await page.goto(fab.dashboardLoginUrl);
    await page.waitForSelector('#conn.live');
    await page.click('[data-testid="crash-defender-1"]');
    await waitFor('the crash map', async () => (await page.locator('[data-testid="map-trigger"]').textContent()) === 'crash', 60_000, 250);
    await page.waitForTimeout(1500);
    await page.screenshot({ path: join(REPO, 'docs/images/dashboard-cluster.png') });
    const { chambers } = (await (await fetch(`${fab.dashboardUrl}api/v1/chambers`, { headers: { authorization: `Bearer ${fab.dashboardToken}` } })).json()) as { chambers: { key: string }[] };
    const busiest = chambers[0];
    if (!busiest) throw new Error('the fab has no chambers');
    await page.goto(`${fab.dashboardUrl}#/chamber/${encodeURIComponent(busiest.key)}`);
    await page.waitForSelector('svg[data-testid="uchart"][data-has-limits="true"]');
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(REPO, 'docs/images/dashboard-chamber.png') });
    await browser.close();
    process.stderr.write('screenshots written to docs/images/dashboard-cluster.png and docs/images/dashboard-chamber.png\n');
  } finally {
    await fab.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
