import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

// Runs every tools/bench/*.bench.ts in its own process (no JIT or heap state shared between them),
// including the whole-fab replay (fab-replay.bench.ts, the longest: tens of minutes).
// BENCH_SKIP=fab-replay,pipeline leaves benches out by name.
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
