import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEVELOPMENT_DEVTOOL, devtoolFor, devtoolOfTask, PRODUCTION_DEVTOOL, RunAppPlugin } from '../../webpack.preset';

const REPO = join(__dirname, '..', '..');
const APPS = ['defender', 'assignment-controller', 'election-agent', 'dashboard'];

describe('the apps\' webpack source maps', () => {
  it('builds line-level maps without sources for production and full ones for nx serve', () => {
    expect(PRODUCTION_DEVTOOL).toBe('nosources-cheap-module-source-map');
    expect(DEVELOPMENT_DEVTOOL).toBe('source-map');
    expect(devtoolFor('production')).toBe(PRODUCTION_DEVTOOL);
    expect(devtoolFor(undefined)).toBe(PRODUCTION_DEVTOOL);
    expect(devtoolFor('development')).toBe(DEVELOPMENT_DEVTOOL);
  });

  it('takes the configuration from the Nx task running webpack-cli', () => {
    expect(devtoolOfTask({ NX_TASK_TARGET_CONFIGURATION: 'development' })).toBe('source-map');
    expect(devtoolOfTask({ NX_TASK_TARGET_CONFIGURATION: 'production' })).toBe('nosources-cheap-module-source-map');
    expect(devtoolOfTask({})).toBe('nosources-cheap-module-source-map');
  });

  it('every app bundle takes it and sets no devtool of its own', () => {
    for (const app of APPS) {
      const config = readFileSync(join(REPO, 'apps', app, 'webpack.config.js'), 'utf8');
      expect({ app, takes: config.includes('sourceMap: devtoolOfTask()'), setsItsOwn: /devtool\s*[:=]/.test(config) }).toEqual({ app, takes: true, setsItsOwn: false });
    }
  });
});

describe('the apps\' nx serve', () => {
  it('every app runs under nx serve, rebuilt in watch mode with modules kept in memory', () => {
    for (const name of APPS) {
      const config = readFileSync(join(REPO, 'apps', name, 'webpack.config.js'), 'utf8');
      const serve = (JSON.parse(readFileSync(join(REPO, 'apps', name, 'project.json'), 'utf8')) as { targets: Record<string, { options?: { command?: string } }> }).targets['serve'];
      expect({ name, serve: serve?.options?.command, runs: config.includes('...(env.serve ? [new RunAppPlugin()] : [])'), watch: config.includes('watch: env.WEBPACK_WATCH === true') }).toEqual({
        name,
        serve: 'webpack-cli build --watch --env serve',
        runs: true,
        watch: true,
      });
    }
  });
});

/** What the plugin sees of webpack: the two hooks it taps, the output path and a logger. */
function fakeCompiler(outputPath: string) {
  const done: ((stats: { hasErrors(): boolean }) => void)[] = [];
  const watchClose: (() => void)[] = [];
  const warnings: string[] = [];
  const compiler = {
    options: { output: { path: outputPath } },
    hooks: {
      done: { tap: (_name: string, fn: (stats: { hasErrors(): boolean }) => void) => done.push(fn) },
      watchClose: { tap: (_name: string, fn: () => void) => watchClose.push(fn) },
    },
    getInfrastructureLogger: () => ({ info: () => undefined, warn: (m: string) => warnings.push(m) }),
  };
  return {
    compiler: compiler as unknown as Parameters<RunAppPlugin['apply']>[0],
    warnings,
    built: (ok: boolean) => done.forEach((fn) => fn({ hasErrors: () => !ok })),
    closeWatch: () => watchClose.forEach((fn) => fn()),
  };
}

/** Polls until `check` holds; the guard only catches a hang, it bounds no behaviour. */
async function until(what: string, check: () => boolean): Promise<void> {
  const guard = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > guard) throw new Error(`still waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('RunAppPlugin (nx serve)', () => {
  let out: string;
  // The built app of these tests: records its start (pid, directory), its SIGTERM and its exit (a
  // moment after the SIGTERM, as an app drains) in events.log; exits at once with the code in
  // exit-code when that file exists.
  const app = `
    const { appendFileSync, existsSync, readFileSync } = require('node:fs');
    const here = (file) => require('node:path').join(__dirname, file);
    const log = (what) => appendFileSync(here('events.log'), JSON.stringify({ pid: process.pid, what, cwd: process.cwd() }) + '\\n');
    process.on('SIGTERM', () => {
      log('SIGTERM');
      setTimeout(() => { log('exit'); process.exit(0); }, 200);
    });
    setInterval(() => undefined, 1000);
    if (existsSync(here('exit-code'))) {
      log('exiting');
      process.exit(Number(readFileSync(here('exit-code'), 'utf8')));
    }
    log('started');
  `;
  const events = (): { pid: number; what: string; cwd: string }[] =>
    existsSync(join(out, 'events.log')) ? readFileSync(join(out, 'events.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];

  beforeEach(() => {
    out = mkdtempSync(join(tmpdir(), 'run-app-plugin-'));
    writeFileSync(join(out, 'main.js'), app);
  });
  afterEach(() => rmSync(out, { recursive: true, force: true }));

  it('starts main.js in the workspace root after a build, restarts it after a successful one, leaves it after a failed one, and stops it with the watch', async () => {
    const webpack = fakeCompiler(out);
    new RunAppPlugin().apply(webpack.compiler);

    webpack.built(true);
    await until('the first start', () => events().length === 1);
    const [a] = events();
    expect(a).toEqual({ pid: expect.any(Number), what: 'started', cwd: REPO });
    const of = (pid: number, ...what: string[]) => what.map((w) => ({ pid, what: w, cwd: REPO }));

    webpack.built(false);
    expect(webpack.warnings).toEqual([expect.stringContaining('build failed')]);
    // Two builds ending while the first app drains start one app, once the first one has exited.
    webpack.built(true);
    webpack.built(true);
    await until('the restart', () => events().length === 4);
    const b = events()[3]!;
    expect(events()).toEqual([...of(a!.pid, 'started', 'SIGTERM', 'exit'), ...of(b.pid, 'started')]);

    webpack.closeWatch();
    await until('the stop', () => events().length === 6);
    expect(events().slice(4)).toEqual(of(b.pid, 'SIGTERM', 'exit'));
    expect(webpack.warnings).toHaveLength(1);
  });

  it('says when the app exits by itself, and starts it again after the next build', async () => {
    const webpack = fakeCompiler(out);
    new RunAppPlugin().apply(webpack.compiler);
    writeFileSync(join(out, 'exit-code'), '3');
    webpack.built(true);
    await until('the exit warning', () => webpack.warnings.length === 1);
    rmSync(join(out, 'exit-code'));
    expect(webpack.warnings[0]).toMatch(/main\.js exited \(code 3\)/);

    webpack.built(true);
    await until('the start', () => events().some((e) => e.what === 'started'));
    webpack.closeWatch();
    await until('the stop', () => events().some((e) => e.what === 'exit'));
    expect(events().map((e) => e.what)).toEqual(['exiting', 'started', 'SIGTERM', 'exit']);
  });
});
