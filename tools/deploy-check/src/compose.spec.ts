import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { dockerIgnored } from './lib/dockerfile-lint';
import { NATS_IDENTITY_KEYS } from './lib/env-checks';
import { listApps, readRepoFile, REPO } from './lib/repo';
import { ComposeFile, ComposeService, composeServiceApp, interpolate, parseCompose } from './lib/workloads';

/**
 * docker-compose.yml cannot be started here (no container engine) and `docker compose config` is
 * not available, so its structure is checked: the services the stack needs, healthchecks behind
 * every `depends_on` condition, profiles, ports, volumes, images built from the apps' Dockerfiles.
 */

const apps = listApps().map((a) => a.name);
const file = parseCompose(readRepoFile('docker-compose.yml'));
const dockerignore = readRepoFile('.dockerignore').split('\n');

const argv = (v: string | string[] | undefined): string[] => (Array.isArray(v) ? v : typeof v === 'string' ? v.split(/\s+/).filter(Boolean) : []);

/** For a service that runs `node [-r preload] script ...`: the preload and script files. */
function nodeFiles(s: ComposeService): string[] | undefined {
  const args = [...argv(s['entrypoint'] as string | string[] | undefined), ...argv(s.command)];
  if (args[0] !== 'node') return undefined;
  const files: string[] = [];
  for (let i = 1; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '-r' || a === '--require') files.push(args[++i] ?? '');
    else if (!a.startsWith('-')) {
      files.push(a);
      break;
    }
  }
  return files;
}

/** A one-shot job (restart: "no"): nothing waits for it to be healthy. */
const isJob = (s: ComposeService) => s['restart'] === 'no';

/** Structural problems of a compose file (see the tests below for the rules). */
function checkCompose(f: ComposeFile): string[] {
  const problems: string[] = [];
  const services = f.services ?? {};
  const declaredVolumes = new Set(Object.keys(f.volumes ?? {}));
  const hostPorts = new Map<string, string>();
  for (const [name, s] of Object.entries(services)) {
    const at = `service ${name}`;
    if (!s.image && !s.build) problems.push(`${at}: neither image nor build`);
    const image = s.image ?? '';
    if (s.image && !/:[^/]+$/.test(image)) problems.push(`${at}: image ${image} has no tag`);
    if (/:latest$/.test(image)) problems.push(`${at}: image ${image} uses latest`);
    const app = composeServiceApp(s, apps);
    const inline = typeof s.build === 'object' && typeof (s.build as Record<string, unknown>)['dockerfile_inline'] === 'string';
    if (s.build && inline) {
      if ((s.profiles ?? []).length === 0) problems.push(`${at}: an inline Dockerfile is for tools under a profile; apps build from apps/<app>/Dockerfile`);
    } else if (s.build) {
      if (!app) problems.push(`${at}: builds something that is not apps/<app>/Dockerfile`);
      else {
        if (typeof s.build !== 'object' || (s.build.context ?? '.') !== '.') problems.push(`${at}: build context must be the repository root (.dockerignore applies there)`);
        if (!existsSync(join(REPO, 'apps', app, 'Dockerfile'))) problems.push(`${at}: apps/${app}/Dockerfile does not exist`);
        if (!image.startsWith(`defender/${app}:`)) problems.push(`${at}: image should be defender/${app}:<tag>, is ${image}`);
        if ((s.profiles ?? []).length > 0) problems.push(`${at}: app services belong to the default stack (no profile)`);
      }
    }
    const test = s.healthcheck?.test;
    if ((!test || s.healthcheck?.disable) && !isJob(s)) problems.push(`${at}: no healthcheck`);
    else if (Array.isArray(test) && !['CMD', 'CMD-SHELL'].includes(test[0]!)) problems.push(`${at}: healthcheck test must start with CMD or CMD-SHELL`);
    if (!s['restart']) problems.push(`${at}: no restart policy`);

    const deps = s.depends_on ?? {};
    if (Array.isArray(deps)) problems.push(`${at}: depends_on needs conditions (long form)`);
    else {
      for (const [dep, cond] of Object.entries(deps)) {
        const target = services[dep];
        if (!target) {
          problems.push(`${at}: depends on unknown service ${dep}`);
          continue;
        }
        if (cond.condition !== 'service_healthy' && cond.condition !== 'service_completed_successfully') problems.push(`${at}: depends on ${dep} without a health condition`);
        if (cond.condition === 'service_healthy' && !target.healthcheck?.test) problems.push(`${at}: waits for ${dep} to be healthy, but ${dep} has no healthcheck`);
        const mine = s.profiles ?? [];
        const theirs = target.profiles ?? [];
        if (theirs.length > 0 && !theirs.some((p) => mine.includes(p))) problems.push(`${at}: depends on ${dep}, which only runs under profile(s) ${theirs.join(', ')}`);
      }
    }
    for (const p of s.ports ?? []) {
      const spec = typeof p === 'object' ? `${p.host_ip ?? ''}:${String(p.published ?? '')}:${p.target}` : String(p);
      const parts = spec.split(':');
      if (parts.length < 3 || parts[0] !== '127.0.0.1') problems.push(`${at}: port ${spec} should be bound to 127.0.0.1 (a development stack)`);
      const host = parts.length >= 2 ? parts[parts.length - 2]! : '';
      const other = hostPorts.get(host);
      if (other) problems.push(`${at}: host port ${host} is also published by ${other}`);
      hostPorts.set(host, at);
    }
    for (const v of s.volumes ?? []) {
      const source = typeof v === 'string' ? v.split(':')[0]! : (v.source ?? '');
      if (source.startsWith('.') || source.startsWith('/')) {
        if (!existsSync(join(REPO, source))) problems.push(`${at}: bind mount ${source} does not exist`);
      } else if (!declaredVolumes.has(source)) problems.push(`${at}: volume ${source} is not declared`);
    }
    for (const f of nodeFiles(s) ?? []) {
      const rel = f.replace(/^\.\//, '');
      if (!rel || !existsSync(join(REPO, rel))) problems.push(`${at}: runs node with ${f || '(nothing)'}, which does not exist`);
      else if (s.build && dockerIgnored(dockerignore, rel)) problems.push(`${at}: ${f} is excluded from the build context by .dockerignore`);
    }
  }
  return problems;
}

describe('docker-compose.yml', () => {
  it('is well formed: images, builds, healthchecks, depends_on conditions, profiles, ports, volumes', () => {
    expect(checkCompose(file)).toEqual([]);
  });

  it('runs NATS with JetStream on file storage kept in a volume', () => {
    const nats = file.services['nats']!;
    const args = nats.command as string[];
    expect(args).toContain('--jetstream');
    const store = args.find((a) => a.startsWith('--store_dir='))?.split('=')[1];
    expect(store).toBeDefined();
    expect((nats.volumes ?? []).some((v) => typeof v === 'string' && v.split(':')[1] === store)).toBe(true);
  });

  it('runs 2 election agents, 2 controllers and 3 defenders besides NATS and Cassandra', () => {
    const count = (app: string) => Object.values(file.services).filter((s) => composeServiceApp(s, apps) === app).length;
    expect({ agents: count('election-agent'), controllers: count('assignment-controller'), defenders: count('defender') }).toEqual({ agents: 2, controllers: 2, defenders: 3 });
    expect(Object.keys(file.services)).toEqual(expect.arrayContaining(['nats', 'cassandra']));
  });

  it('starts every app after NATS is healthy, and the store users after Cassandra', () => {
    for (const [name, s] of Object.entries(file.services)) {
      if (!composeServiceApp(s, apps)) continue;
      expect({ name, nats: (s.depends_on as Record<string, { condition: string }>)['nats']?.condition }).toEqual({ name, nats: 'service_healthy' });
      const env = (s.environment ?? {}) as Record<string, string>;
      if (env['STORE_BACKEND'] === 'cassandra') {
        expect({ name, cassandra: (s.depends_on as Record<string, { condition: string }>)['cassandra']?.condition }).toEqual({ name, cassandra: 'service_healthy' });
      }
    }
  });

  it('runs the fab simulator (sim profile) from the workspace, against the same NATS and store as the defenders', () => {
    const sims = Object.entries(file.services).filter(([, s]) => (s.profiles ?? []).includes('sim'));
    expect(sims.map(([n]) => n)).toEqual(['fab-sim']);
    const [, sim] = sims[0]!;
    expect(nodeFiles(sim)).toEqual(['./tools/scripts/register.js', 'tools/fab-sim/src/main.ts']);
    const defender = Object.values(file.services).find((s) => composeServiceApp(s, apps) === 'defender')!;
    const mine = (sim.environment ?? {}) as Record<string, string>;
    const theirs = (defender.environment ?? {}) as Record<string, string>;
    // Its own NATS identity (the fab's equipment, `publisher`), the defenders' connection and store.
    for (const key of Object.keys(mine).filter((k) => !NATS_IDENTITY_KEYS.includes(k))) expect({ key, value: mine[key] }).toEqual({ key, value: theirs[key] });
  });

  it('needs no variables from the host: every ${VAR} has a default', () => {
    const text = readRepoFile('docker-compose.yml');
    const lines = text.split('\n').filter((l) => !l.trim().startsWith('#') && l.includes('$'));
    expect(lines.flatMap((l) => interpolate(l).unset)).toEqual([]);
  });
});

describe('the compose checks catch what they are for', () => {
  const mutate = (change: (f: ComposeFile) => void): string[] => {
    const copy = parseCompose(readRepoFile('docker-compose.yml'));
    change(copy);
    return checkCompose(copy);
  };

  it.each([
    ['a dependency on a service without a healthcheck', (f: ComposeFile) => delete f.services['nats']!.healthcheck, /nats has no healthcheck/],
    ['a dependency on a monitoring-only service', (f: ComposeFile) => ((f.services['defender-1']!.depends_on as Record<string, object>)['grafana'] = { condition: 'service_healthy' }), /only runs under profile/],
    ['a host port used twice', (f: ComposeFile) => (f.services['defender-2']!.ports = ['127.0.0.1:8080:8080']), /host port 8080 is also published/],
    ['an undeclared volume', (f: ComposeFile) => (f.services['nats']!.volumes = ['nats-store:/data']), /volume nats-store is not declared/],
    ['a simulator script that does not exist', (f: ComposeFile) => (f.services['sim'] = { image: 'node:24-bookworm-slim', command: ['node', 'tools/sim/missing.js'], healthcheck: { test: ['CMD', 'true'] }, restart: 'no' }), /does not exist/],
  ])('%s', (_name, change, message) => {
    expect(mutate(change as (f: ComposeFile) => void)).toEqual(expect.arrayContaining([expect.stringMatching(message)]));
  });
});
