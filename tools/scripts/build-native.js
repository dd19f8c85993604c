// Builds the defender's native addon (libs/malloc/native: glibc's malloc_trim and mallinfo2) with
// node-gyp: npm's own copy, against Node's headers (npm's nodedir when set, as on the CI machine
// and in the defender image). Runs on `npm ci` (postinstall) and as `npm run build:native`.
const { execFileSync } = require('node:child_process');
const { existsSync } = require('node:fs');
const { dirname, join } = require('node:path');

const dir = join(__dirname, '..', '..', 'libs', 'malloc', 'native');
const candidates = [
  process.env.npm_config_node_gyp,
  join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
].filter((p) => p && existsSync(p));
if (candidates.length === 0) {
  console.error('build-native: node-gyp not found (npm ships it; run this through npm: `npm run build:native`)');
  process.exit(1);
}
try {
  execFileSync(process.execPath, [candidates[0], 'rebuild', '--release'], { cwd: dir, stdio: 'inherit' });
} catch (err) {
  console.error(`build-native: node-gyp failed in ${dir}: ${err.message}`);
  process.exit(1);
}
const built = join(dir, 'build', 'Release', 'malloc.node');
if (!existsSync(built)) {
  console.error(`build-native: ${built} is missing after the build`);
  process.exit(1);
}
console.log(`build-native: ${built}`);
