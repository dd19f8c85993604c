import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

// Runs every tools/bench/*.bench.ts in its own process (no JIT or heap state shared between them).
const files = readdirSync(__dirname).filter((f) => f.endsWith('.bench.ts')).sort();
let failed = 0;
for (const f of files) {
  process.stdout.write(`\n== ${f}\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', '-r', join(__dirname, '..', 'scripts', 'register.js'), join(__dirname, f)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
