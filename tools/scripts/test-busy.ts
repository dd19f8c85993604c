/**
 * `npm run test:busy`: the README's test command (`npm test`, tools/scripts/test-all.ts) with CPU hogs
 * beside it (two by default, TEST_BUSY_HOGS to change), as the machine is when other work shares it.
 * Run it before a change that touches tests or timing is submitted (docs/extending.md): a test that
 * passes only on an idle machine fails CI sooner or later. Arguments go to `npm test`, e.g.
 * `npm run test:busy -- -p store`.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { HogCountError, parseHogCount, startCpuHogs } from './cpu-hogs';

const USAGE = `Usage: npm run test:busy [-- <nx run-many options>]

Runs \`npm test\` (lint, typecheck, build and test of every project, real servers) with CPU hogs
beside it: processes that each spin one core for the whole run.

Environment:
  TEST_BUSY_HOGS=N   how many hogs (default 2, the cores of the CI machine)

  -h, --help  this text
`;

function log(line: string): void {
  process.stderr.write(`[test-busy] ${line}\n`);
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  let count: number;
  try {
    count = parseHogCount(process.env['TEST_BUSY_HOGS']);
  } catch (err) {
    if (!(err instanceof HogCountError)) throw err;
    log(err.message);
    return 2;
  }
  const started = Date.now();
  const hogs = startCpuHogs(count);
  log(`${count} CPU hogs running (pids ${hogs.pids.join(', ') || 'none'})`);
  try {
    const code = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-r', join(__dirname, 'register.js'), join(__dirname, 'test-all.ts'), ...args], { stdio: 'inherit' });
      const forward = (sig: NodeJS.Signals) => child.kill(sig);
      process.on('SIGINT', forward);
      process.on('SIGTERM', forward);
      child.on('close', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
    });
    log(`tests finished with code ${code} in ${((Date.now() - started) / 1000).toFixed(0)} s beside ${count} CPU hogs`);
    return code;
  } finally {
    await hogs.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
