import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const REPO = join(__dirname, '..', '..', '..');

/**
 * `npm start` on a fresh clone (issue 52, item 5: its install was ~100 s of npm warnings with no
 * progress): start.sh copied into an empty checkout whose `npm` is a stub that prints warnings, so
 * nothing is installed and the real node_modules is not touched.
 */
describe('start.sh: installing on a fresh clone', () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'local-fab-start-'));
    const file = (path: string, text: string, mode = 0o644) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
      chmodSync(join(root, path), mode);
    };
    mkdirSync(join(root, 'tools/local-fab'), { recursive: true });
    copyFileSync(join(REPO, 'tools/local-fab/start.sh'), join(root, 'tools/local-fab/start.sh'));
    file('package-lock.json', '{}\n');
    // No node_modules: start.sh installs. After the install it checks the Node and (with --help) runs main.ts.
    file('tools/scripts/workspace-node.js', '');
    file('tools/scripts/register.js', '');
    file('tools/local-fab/src/main.ts', "process.stdout.write('main ' + process.argv.slice(2).join(' ') + '\\n');\n");
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const run = (npmExit: number) => {
    const bin = join(root, 'stub-bin');
    mkdirSync(bin);
    const npm = join(bin, 'npm');
    writeFileSync(npm, `#!/usr/bin/env bash\necho "npm $*" >>"${root}/npm-calls"\nfor i in $(seq 1 60); do echo "npm warn deprecated package-$i@1.0.0: no longer supported" >&2; done\nexit ${npmExit}\n`);
    chmodSync(npm, 0o755);
    return spawnSync('bash', [join(root, 'tools/local-fab/start.sh'), '--help'], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`, HOME: root },
    });
  };

  it('prints one progress line naming the log, not npm\'s warnings; installs as before (npm ci --no-audit --no-fund)', () => {
    const r = run(0);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^local-fab: installing dependencies \(npm ci, .*log: tmp\/local-fab\/install\.log\) \.\.\.\n/);
    expect(r.stdout).toMatch(/local-fab: dependencies installed in \d+ s\n/);
    expect(r.stdout + r.stderr).not.toContain('npm warn');
    expect(r.stdout).toContain('main --help');
    expect(readFileSync(join(root, 'tmp/local-fab/install.log'), 'utf8')).toContain('npm warn deprecated package-60@1.0.0');
    expect(readFileSync(join(root, 'npm-calls'), 'utf8')).toBe('npm ci --no-audit --no-fund\n');
  });

  it('a failed install shows the log\'s end and exits 1 before anything else runs', () => {
    const r = run(1);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('npm warn deprecated package-60@1.0.0');
    expect(r.stderr).toContain('local-fab: npm ci failed (full log: tmp/local-fab/install.log)');
    expect(r.stdout).not.toContain('main --help');
  });
});
