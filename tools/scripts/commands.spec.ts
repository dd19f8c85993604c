import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The README's two commands answer a wrong or help command line at once, before starting or building anything. */

const REPO = join(__dirname, '..', '..');

describe('npm test and npm start command lines', () => {
  it('`npm test -- --help` prints its usage and exits 0 without starting a server', () => {
    const r = spawnSync(process.execPath, ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/scripts/test-all.ts'), '--help'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: npm test/);
    expect(r.stderr).not.toMatch(/Cassandra|nats-server/);
  });

  it('`npm run test:busy -- --help` prints its usage and exits 0 without starting a hog or a server', () => {
    const r = spawnSync(process.execPath, ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/scripts/test-busy.ts'), '--help'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: npm run test:busy/);
    expect(r.stderr).not.toMatch(/hogs running|Cassandra|nats-server/);
  });

  it('`npm run test:busy` with a bad TEST_BUSY_HOGS is a usage error (exit 2) before anything starts', () => {
    const r = spawnSync(process.execPath, ['-r', join(REPO, 'tools/scripts/register.js'), join(REPO, 'tools/scripts/test-busy.ts')], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, TEST_BUSY_HOGS: 'many' },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/TEST_BUSY_HOGS must be a whole number/);
    expect(r.stderr).not.toMatch(/hogs running/);
  });

  it('`npm start -- --bogus` is a usage error (exit 2) before the build', () => {
    const r = spawnSync('bash', [join(REPO, 'tools/local-fab/start.sh'), '--bogus'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/Unknown option '--bogus'/);
    expect(r.stdout).not.toMatch(/building/);
  });

  it('`npm start -- --defenders 0` names the bad value before the build', () => {
    const r = spawnSync('bash', [join(REPO, 'tools/local-fab/start.sh'), '--defenders', '0'], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--defenders must be an integer in 1\.\.50/);
    expect(r.stdout).not.toMatch(/building/);
  });
});
