import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The workspace runs on the Node of package.json `engines` (tools/scripts/workspace-node.js). */

const REPO = join(__dirname, '..', '..');
const SCRIPT = join(REPO, 'tools/scripts/workspace-node.js');
const engines = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
const wanted = Number(/^>=(\d+)/.exec(engines)?.[1]);

/** `stderr` without npm's "Unknown user / env / global config" warnings (one line each). */
function withoutOutsideConfigWarnings(stderr: string): string {
  return stderr
    .split('\n')
    .filter((line) => !/^npm warn Unknown (user|env|global) config "[^"]+"\./.test(line))
    .join('\n');
}

describe('the workspace Node', () => {
  it('runs the tests: Jest is on the Node that package.json engines asks for (24 or newer)', () => {
    expect(wanted).toBeGreaterThanOrEqual(24);
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(wanted);
  });

  it('is the `node` of npm scripts and `npm exec` (node_modules/.bin/node first on PATH), the same Node as this test', () => {
    const r = spawnSync('npm', ['exec', '--offline', '-c', 'node -e "process.stdout.write(process.version)"'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
    // Nothing on stderr but npm's remarks on configuration from outside the project: npm 11 warns
    // of keys it does not know in the machine's ~/.npmrc (a CI image sets `nodedir` there, for
    // node-gyp) and again for the npm_config_* it exports from them. A project config is not excused.
    expect(withoutOutsideConfigWarnings(r.stderr)).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(process.version);
  });

  it('the check of `npm test` and `npm start` passes on this Node and names it', () => {
    const r = spawnSync(process.execPath, [SCRIPT, 'npm test'], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    expect(r.stderr).toBe(`npm test: Node ${process.version} (${process.execPath})\n`);
  });

  it('an older Node gets a clear error naming both versions and the way out', () => {
    const program = `process.stdout.write(String(require(${JSON.stringify(SCRIPT)}).tooOld('npm test', 'v20.20.2', '/usr/bin/node')))`;
    const r = spawnSync(process.execPath, ['-e', program], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^npm test needs Node >= ${wanted} \\(package\\.json engines\\), this is Node v20\\.20\\.2 at /usr/bin/node\\. `));
    expect(r.stdout).toMatch(/run through npm|install Node/);
  });

  it('a Node that is new enough passes', () => {
    const program = `process.stdout.write(String(require(${JSON.stringify(SCRIPT)}).tooOld('npm test', 'v${wanted}.0.0', '/x/node')))`;
    const r = spawnSync(process.execPath, ['-e', program], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
    expect(r.stdout).toBe('undefined');
  });
});
