import { AppEnvSpec, loadAppEnvSpecs } from './lib/app-env';
import {
  checkAgreement,
  checkComposeIdentities,
  checkComposeUrls,
  checkElectionAddresses,
  checkElectionAuth,
  checkFileVariables,
  checkRuntimeFit,
  checkSameNames,
  checkSingleControllerMode,
  checkWorkloadEnv,
  sharedKeys,
  shutdownDeadlineSeconds,
} from './lib/env-checks';
import { K8sObject, render } from './lib/kustomize';
import { describeWithKustomize } from './lib/kustomize-available';
import { readRepoFile } from './lib/repo';
import { composeWorkloads, EnvSetting, k8sWorkloads, parseCompose, Workload } from './lib/workloads';

/**
 * The environment the deployments give each app, against what the app reads: its exported zod
 * schema (apps/<app>/src/app/config.ts), loaded here, so new or renamed variables are picked up
 * without a hand-kept list.
 */

const specs = loadAppEnvSpecs();
const specByApp = new Map(specs.map((s) => [s.app, s]));
const apps = specs.map((s) => s.app);
const deadline = shutdownDeadlineSeconds();

const compose = composeWorkloads(parseCompose(readRepoFile('docker-compose.yml')), apps);

/** A copy of `w` with its environment changed. */
function withEnv(w: Workload, change: (env: Map<string, EnvSetting>) => void): Workload {
  const env = new Map(w.env);
  change(env);
  return { ...w, env };
}

function literal(name: string, value: string): EnvSetting {
  return { name, source: { kind: 'value', value, interpolated: false } };
}

function perWorkload(ws: readonly Workload[], check: (w: Workload, spec: AppEnvSpec) => string[]): string[] {
  return ws.flatMap((w) => check(w, specByApp.get(w.app)!));
}

describe('app environment schemas', () => {
  it('are found for every app, with the variables the deployments rely on', () => {
    expect(apps).toEqual(expect.arrayContaining(['defender', 'assignment-controller', 'election-agent']));
    for (const s of specs) expect(s.keys).toContain('HTTP_PORT');
    expect([...specByApp.get('defender')!.keys]).toEqual(expect.arrayContaining(['POD_NAME', 'POD_UID', 'POD_NAMESPACE', 'SHUTDOWN_DRAIN_TIMEOUT_SECONDS']));
  });

  it('reads the shutdown deadline every app honours from @defender/nest-common', () => {
    expect(deadline).toBeGreaterThan(0);
  });
});

describe('docker-compose.yml', () => {
  it('runs every app, from its Dockerfile', () => {
    expect(compose.problems).toEqual([]);
    expect(new Set(compose.workloads.map((w) => w.app))).toEqual(new Set(apps));
  });

  it('sets only variables the apps read, every required one, and values the apps accept', () => {
    expect(perWorkload(compose.workloads, checkWorkloadEnv)).toEqual([]);
  });

  it('lets every process agree on NATS, the cluster shape and the store', () => {
    expect(checkAgreement(compose.workloads, specByApp, sharedKeys())).toEqual([]);
  });

  it('gives the controllers a token the election agents accept, and addresses that reach them', () => {
    expect(checkElectionAuth(compose.workloads, specByApp)).toEqual([]);
    expect(checkElectionAddresses(compose.workloads, specByApp)).toEqual([]);
    expect(checkSingleControllerMode(compose.workloads, specByApp)).toEqual([]);
  });

  it('publishes the configured ports, waits out the shutdown drain, and shares one Cassandra', () => {
    expect(perWorkload(compose.workloads, (w, s) => checkRuntimeFit(w, s, deadline))).toEqual([]);
  });

  it('gives each process its own identity', () => {
    expect(checkComposeIdentities(compose.workloads)).toEqual([]);
  });

  it('points URL settings (CONTROLLER_URLS, ...) at app services and their HTTP ports', () => {
    expect(checkComposeUrls(compose.workloads, specByApp)).toEqual([]);
  });
});

describe('the checks catch what they are for', () => {
  const defender = compose.workloads.find((w) => w.app === 'defender')!;
  const controller = compose.workloads.find((w) => w.app === 'assignment-controller')!;
  const agent = compose.workloads.find((w) => w.app === 'election-agent')!;
  const spec = (w: Workload) => specByApp.get(w.app)!;

  it('a misspelt or stale variable name', () => {
    const w = withEnv(defender, (env) => env.set('MAX_DEFENDER_COUNT', literal('MAX_DEFENDER_COUNT', '50')));
    expect(checkWorkloadEnv(w, spec(w))).toEqual([expect.stringContaining('sets MAX_DEFENDER_COUNT, which defender does not read')]);
  });

  it('runtime variables (NODE_OPTIONS, glibc MALLOC_*) are not app variables, and are allowed', () => {
    const w = withEnv(defender, (env) => {
      env.set('NODE_OPTIONS', literal('NODE_OPTIONS', '--max-old-space-size=384'));
      env.set('MALLOC_ARENA_MAX', literal('MALLOC_ARENA_MAX', '2'));
    });
    expect(checkWorkloadEnv(w, spec(w))).toEqual([]);
  });

  it('a value the app would reject at startup', () => {
    const w = withEnv(defender, (env) => env.set('HEARTBEAT_INTERVAL_SECONDS', literal('HEARTBEAT_INTERVAL_SECONDS', 'two')));
    expect(checkWorkloadEnv(w, spec(w))).toEqual([expect.stringMatching(/would refuse to start: HEARTBEAT_INTERVAL_SECONDS/)]);
  });

  it('a required variable left unset', () => {
    const strict: AppEnvSpec = { ...spec(defender), required: new Set(['NATS_SERVERS']) };
    const w = withEnv(defender, (env) => env.delete('NATS_SERVERS'));
    expect(checkWorkloadEnv(w, strict)).toEqual(expect.arrayContaining([expect.stringContaining('required variable NATS_SERVERS')]));
  });

  it('a single-machine default left in place', () => {
    const w = withEnv(defender, (env) => env.delete('CASSANDRA_HOSTS'));
    expect(checkWorkloadEnv(w, spec(w))).toEqual([expect.stringContaining('CASSANDRA_HOSTS must be set explicitly')]);
  });

  it('a committed secret', () => {
    const w = withEnv(controller, (env) => {
      env.set('CASSANDRA_USERNAME', literal('CASSANDRA_USERNAME', 'defender'));
      env.set('CASSANDRA_PASSWORD', literal('CASSANDRA_PASSWORD', 'hunter2-hunter2'));
    });
    expect(checkWorkloadEnv(w, spec(w))).toEqual([expect.stringContaining('CASSANDRA_PASSWORD is a literal')]);
  });

  it('half-set credentials: the app would refuse to start (fail closed)', () => {
    const w = withEnv(controller, (env) => env.set('CASSANDRA_USERNAME', literal('CASSANDRA_USERNAME', 'defender')));
    expect(checkWorkloadEnv(w, spec(w))).toEqual([expect.stringContaining('CASSANDRA_PASSWORD is required when CASSANDRA_USERNAME is set')]);
  });

  it('a dashboard without login on a non-loopback address: it would refuse to start', () => {
    const dashboard = compose.workloads.find((w) => w.app === 'dashboard')!;
    expect(dashboard.env.get('DASHBOARD_AUTH')?.source).toMatchObject({ kind: 'value', value: 'token' });
    const w = withEnv(dashboard, (env) => env.delete('DASHBOARD_AUTH'));
    expect(checkWorkloadEnv(w, spec(w))).toEqual(expect.arrayContaining([expect.stringMatching(/dashboard would refuse to start: .*not a loopback address/)]));
  });

  it('processes disagreeing on the cluster shape', () => {
    const w = withEnv(defender, (env) => env.set('HEARTBEAT_INTERVAL_SECONDS', literal('HEARTBEAT_INTERVAL_SECONDS', '5')));
    const problems = checkAgreement([w, controller], specByApp, sharedKeys());
    expect(problems).toEqual([expect.stringContaining('HEARTBEAT_INTERVAL_SECONDS differs between processes')]);
  });

  it('a controller token the agents do not accept, and an address that leads nowhere', () => {
    const c = withEnv(controller, (env) => {
      env.set('ELECTION_AUTH_TOKEN', literal('ELECTION_AUTH_TOKEN', 'some-other-token-0123456789'));
      env.set('ELECTION_AGENT_ADDR', literal('ELECTION_AGENT_ADDR', 'election-agent-9:9090'));
    });
    expect(checkElectionAuth([agent, c], specByApp)).toEqual([expect.stringContaining('not among those')]);
    expect(checkElectionAddresses([agent, c], specByApp)).toEqual([expect.stringContaining('no election-agent service named election-agent-9')]);
  });

  it('a defender hosting the controller next to the standalone controllers', () => {
    const d = withEnv(defender, (env) => env.set('ASSIGNMENT_CONTROLLER_ENABLED', literal('ASSIGNMENT_CONTROLLER_ENABLED', 'true')));
    expect(checkSingleControllerMode([d, controller], specByApp)).toEqual([expect.stringContaining('host the controller')]);
    expect(checkWorkloadEnv(d, spec(d))).toEqual([expect.stringContaining('ELECTION_AGENT_ADDR must be set explicitly (it campaigns')]);
  });

  it('a grace period shorter than the drain', () => {
    const w = withEnv({ ...defender, gracePeriodSeconds: 20 }, (env) => env.set('SHUTDOWN_DRAIN_TIMEOUT_SECONDS', literal('SHUTDOWN_DRAIN_TIMEOUT_SECONDS', '40')));
    expect(checkRuntimeFit(w, spec(w), deadline)).toEqual([expect.stringMatching(/stop_grace_period 20s < 45s/)]);
  });

  it('compose and Kubernetes drifting apart', () => {
    const k = withEnv({ ...defender, platform: 'k8s', deployment: 'k8s/base' }, (env) => env.set('CACHE_SIZE_MB', literal('CACHE_SIZE_MB', '50')));
    const c = withEnv(defender, (env) => env.delete('CACHE_SIZE_MB'));
    expect(checkSameNames([c], [k])).toEqual([expect.stringContaining('Kubernetes (k8s/base) sets CACHE_SIZE_MB, compose service defender-1 does not')]);
  });
});

describeWithKustomize('Kubernetes manifests (kustomize)', (k) => {
  const overlays = ['k8s/overlays/dev', 'k8s/overlays/prod'];
  const rendered = new Map<string, K8sObject[]>();
  const get = (dir: string): K8sObject[] => {
    if (!rendered.has(dir)) rendered.set(dir, render(k, dir));
    return rendered.get(dir)!;
  };
  const workloadsOf = (dir: string) => k8sWorkloads(dir, get(dir), apps);

  it.each(['k8s/base', ...overlays])('%s runs every app once, with resolvable references', (dir) => {
    const { workloads, problems } = workloadsOf(dir);
    expect(problems).toEqual([]);
    expect(workloads.map((w) => w.app).sort()).toEqual([...apps].sort());
  });

  it.each(overlays)('%s sets only variables the apps read, every required one, from the right sources, with values the apps accept', (dir) => {
    const { workloads } = workloadsOf(dir);
    expect(perWorkload(workloads, checkWorkloadEnv)).toEqual([]);
    expect(workloads.flatMap(checkFileVariables)).toEqual([]);
  });

  it.each(overlays)('%s lets every process agree on NATS, the cluster shape and the store', (dir) => {
    expect(checkAgreement(workloadsOf(dir).workloads, specByApp, sharedKeys())).toEqual([]);
  });

  it.each(overlays)('%s gives election clients an accepted token and a Service that reaches the agents', (dir) => {
    const { workloads } = workloadsOf(dir);
    expect(checkElectionAuth(workloads, specByApp)).toEqual([]);
    expect(checkElectionAddresses(workloads, specByApp, get(dir))).toEqual([]);
    expect(checkSingleControllerMode(workloads, specByApp)).toEqual([]);
  });

  it.each(overlays)('%s exposes the configured ports, outlasts the shutdown drain, and uses Cassandra', (dir) => {
    expect(perWorkload(workloadsOf(dir).workloads, (w, s) => checkRuntimeFit(w, s, deadline))).toEqual([]);
  });

  it('uses the same variable names as docker-compose.yml for each app', () => {
    expect(checkSameNames(compose.workloads, workloadsOf('k8s/base').workloads)).toEqual([]);
  });

  it('adds in overlays only variables the apps read (checked above), never drops one of the base', () => {
    const base = workloadsOf('k8s/base').workloads;
    const problems: string[] = [];
    for (const dir of overlays) {
      for (const w of workloadsOf(dir).workloads) {
        const b = base.find((x) => x.app === w.app)!;
        for (const name of b.env.keys()) if (!w.env.has(name)) problems.push(`${dir}: ${w.where} drops ${name}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
