import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadAppEnvSpecs } from './lib/app-env';
import { DockerfileFacts, dockerIgnored, lintDockerfile } from './lib/dockerfile-lint';
import { listApps, readRepoFile, REPO } from './lib/repo';

/**
 * The apps' Dockerfiles cannot be built here (no container engine), so they are linted: syntax and
 * semantics (dockerfile-utils), hadolint-style hygiene, and this project's rules (multi-stage Nx
 * build of one app, production dependencies from the generated lock with native addons built on the
 * runtime's Debian, non-root, HEALTHCHECK with node, SIGTERM to node as PID 1, the app's ports).
 */

const apps = listApps();
const specs = new Map(loadAppEnvSpecs().map((s) => [s.app, s]));

/** Whether a Node major satisfies package.json `engines.node` (e.g. ">=20.19 <21 || >=22"). */
function enginesAllow(range: string): (major: number) => boolean {
  const cmp = (a: number[], b: number[]) => (a[0]! - b[0]! !== 0 ? a[0]! - b[0]! : (a[1] ?? 0) - (b[1] ?? 0));
  return (major) =>
    range.split('||').some((alt) =>
      alt
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .every((c) => {
          const m = /^(>=|<=|>|<|=)?v?(\d+)(?:\.(\d+))?/.exec(c);
          if (!m) return false;
          const want = [Number(m[2]), Number(m[3] ?? 0)];
          // The newest release of that major, so ">=20.19" admits 20 and "<21" too.
          const d = cmp([major, 999], want);
          return m[1] === '>=' ? d >= 0 : m[1] === '>' ? d > 0 : m[1] === '<' ? d < 0 : m[1] === '<=' ? d <= 0 : major === want[0];
        }),
    );
}

const engines = (JSON.parse(readRepoFile('package.json')) as { engines?: { node?: string } }).engines?.node ?? '>=20';

function facts(app: string): DockerfileFacts {
  const spec = specs.get(app)!;
  const httpPort = spec.defaults.get('HTTP_PORT') as number;
  const grpc = spec.defaults.get('GRPC_PORT') as number | undefined;
  return {
    app,
    outputPath: apps.find((a) => a.name === app)!.build.outputPath,
    httpPort,
    ports: grpc === undefined ? [httpPort] : [httpPort, grpc],
    nodeMajors: enginesAllow(engines),
  };
}

describe.each(apps.map((a) => [a.name, a] as const))('apps/%s/Dockerfile', (name, app) => {
  it('exists, next to a build that writes dist/apps/<app> with a production package.json', () => {
    expect(existsSync(join(REPO, app.root, 'Dockerfile'))).toBe(true);
    expect(app.build).toEqual(expect.objectContaining({ outputPath: `dist/apps/${name}`, generatePackageJson: true }));
  });

  it('passes the lint', () => {
    expect(lintDockerfile(readRepoFile(`${app.root}/Dockerfile`), facts(name))).toEqual([]);
  });
});

describe('.dockerignore', () => {
  const patterns = readRepoFile('.dockerignore').split('\n');

  it('keeps host artefacts and secrets out of the build context', () => {
    for (const p of ['node_modules/x', 'libs/store/node_modules/x', 'dist/apps/defender/main.js', '.git/HEAD', '.nx/cache/x', 'coverage/x', '.env', 'tmp/x']) {
      expect({ path: p, ignored: dockerIgnored(patterns, p) }).toEqual({ path: p, ignored: true });
    }
  });

  it('keeps everything an app build needs in the context', () => {
    const needed = ['package.json', 'package-lock.json', 'nx.json', 'tsconfig.base.json'];
    for (const a of apps) {
      for (const f of readdirSync(join(REPO, a.root))) if (f !== 'Dockerfile' && !f.endsWith('.md')) needed.push(`${a.root}/${f}`);
      needed.push(`${a.root}/src/main.ts`, ...a.build.assets.map((x) => `${x.input}/${x.glob.replace(/\*\*\//g, '').replace(/\*/g, 'x')}`));
    }
    for (const lib of readdirSync(join(REPO, 'libs'))) {
      if (existsSync(join(REPO, 'libs', lib, 'project.json'))) needed.push(`libs/${lib}/project.json`, `libs/${lib}/src/index.ts`);
    }
    const dropped = needed.filter((p) => dockerIgnored(patterns, p));
    expect(dropped).toEqual([]);
  });
});

describe('the Dockerfile lint catches what it is for', () => {
  const good = readRepoFile('apps/defender/Dockerfile');
  const f = facts('defender');
  const rules = (text: string) => lintDockerfile(text, f).map((p) => p.split(' ')[2]);

  it.each([
    ['a root runtime', good.replace('USER 1000:1000', 'USER root'), 'DC006'],
    ['a user name runAsNonRoot cannot check', good.replace('USER 1000:1000', 'USER node'), 'DC006'],
    ['a shell-form CMD (SIGTERM to /bin/sh)', good.replace('CMD ["node", "--enable-source-maps", "main.js"]', 'CMD node main.js'), 'DC009'],
    ['no HEALTHCHECK', good.replace(/HEALTHCHECK[^\n]*\\\n[^\n]*\n/, ''), 'DC007'],
    ['a runtime on another Debian than the addons were built on', good.replace('-bookworm-slim AS runtime', '-alpine AS runtime'), 'DC002'],
    ['an unpinned base image', good.replace('FROM node:${NODE_VERSION}-bookworm AS deps', 'FROM node AS deps'), 'DL3007'],
    ['dev dependencies in the image', good.replace('npm ci --omit=dev', 'npm ci'), 'DC004'],
    ['building every app', good.replace('npx nx build defender', 'npx nx run-many -t build'), 'DC003'],
    ['a wrong port', good.replace('EXPOSE 8080', 'EXPOSE 3000'), 'DC010'],
    ['apt-get without cleanup', good.replace('RUN npm ci --ignore-scripts', 'RUN apt-get update && apt-get install -y git && npm ci --ignore-scripts'), 'DL3015'],
    ['an invalid duration', good.replace('--interval=10s', '--interval=10x'), 'DU19'],
    ['a relative WORKDIR', good.replace('WORKDIR /app', 'WORKDIR app'), 'DU50'],
  ])('%s', (_name, text, rule) => {
    expect(text).not.toEqual(good);
    expect(rules(text)).toContain(rule);
  });

  it('understands .dockerignore patterns as Docker does', () => {
    const p = ['dist', '**/node_modules', '*.log', 'docs/**', '!docs/keep.md', '/tmp/'];
    expect(dockerIgnored(p, 'dist/a/b.js')).toBe(true);
    expect(dockerIgnored(p, 'apps/dist/x')).toBe(false);
    expect(dockerIgnored(p, 'libs/a/node_modules/b')).toBe(true);
    expect(dockerIgnored(p, 'x.log')).toBe(true);
    expect(dockerIgnored(p, 'a/x.log')).toBe(false);
    expect(dockerIgnored(p, 'docs/a.md')).toBe(true);
    expect(dockerIgnored(p, 'docs/keep.md')).toBe(false);
    expect(dockerIgnored(p, 'tmp/x')).toBe(true);
  });
});
