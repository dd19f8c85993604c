import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { handleBenchCommandLine } from './cli';

// Runs every tools/bench/*.bench.ts in its own process (no JIT or heap state shared between them),
// including the whole-fab replay (fab-replay.bench.ts, the longest: tens of minutes).
// BENCH_SKIP=fab-replay,pipeline leaves benches out by name.
handleBenchCommandLine(`Usage: npm run bench

Runs every tools/bench/*.bench.ts in its own process (each writes its section of docs/benchmarks.md),
the whole-fab replay included (tens of minutes). \`npm run bench:<name> -- --help\` describes one.

Environment:
  BENCH_SKIP=a,b      leave these benches out by name (e.g. fab-replay,pipeline)

Options:
  -h, --help          this text
`);
const skip = new Set((process.env['BENCH_SKIP'] ?? '').split(',').map((s) => s.trim()).filter(Boolean));
const files = readdirSync(__dirname)
  .filter((f) => f.endsWith('.bench.ts') && !skip.has(f.slice(0, -'.bench.ts'.length)))
  .sort();
let failed = 0;
for (const f of files) {
  process.stdout.write(`\n== ${f}\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', '-r', join(__dirname, '..', 'scripts', 'register.js'), join(__dirname, f)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
