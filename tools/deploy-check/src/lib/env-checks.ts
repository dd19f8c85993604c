import { clusterEnvShape, commonEnvShape, ConfigValidationError, installGracefulShutdown, loadConfig, storeEnvShape } from '@defender/nest-common';
import { RUNTIME_ENV_PATTERN } from '@defender/infra-harness';
import type { z } from 'zod';
import { AppEnvSpec } from './app-env';
import { K8sObject } from './kustomize';
import { EnvSetting, Workload } from './workloads';

/**
 * Variables whose defaults suit `nx serve` on one machine (127.0.0.1, SQLite, ...) and are wrong in a
 * container: wherever an app reads one, compose and Kubernetes must set it explicitly. HTTP_PORT is
 * here so the container ports can be checked against the configuration.
 */
export const MUST_SET = ['NATS_SERVERS', 'STORE_BACKEND', 'CASSANDRA_HOSTS', 'CASSANDRA_LOCAL_DC', 'HTTP_PORT', 'GRPC_PORT'] as const;

/**
 * The defender's switch for the seeds' embedded mode (it hosts the assignment controller): its
 * election variables matter only when the switch is on, and then no standalone controller may run
 * against the same cluster (apps/defender/src/app/config.ts).
 */
export const EMBEDDED_CONTROLLER_SWITCH = 'ASSIGNMENT_CONTROLLER_ENABLED';


/** Downward-API variables: in Kubernetes they come from these pod fields, never from a literal. */
export const DOWNWARD_API: Readonly<Record<string, string>> = {
  POD_NAME: 'metadata.name',
  POD_UID: 'metadata.uid',
  POD_NAMESPACE: 'metadata.namespace',
};

/** The same rule as loadConfig's: these values are never echoed, and never committed as literals. */
const SECRET_NAME = /PASSWORD|TOKEN|SECRET|CREDENTIAL|PRIVATE/i;

/** A process's own NATS identity: each app connects as its role (SECURITY.md), so these differ. */
export const NATS_IDENTITY_KEYS: readonly string[] = ['NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN'];

/**
 * Variables every process of one deployment must agree on, whichever app reads them: the NATS
 * connection (not the identity), the cluster shape (heartbeats, ID pool, KV buckets) and the store.
 * Taken from the shared shapes in @defender/nest-common, so a variable added there is covered here.
 */
export function sharedKeys(): string[] {
  const common = Object.keys(commonEnvShape(0)).filter((k) => k.startsWith('NATS_') && !NATS_IDENTITY_KEYS.includes(k));
  return [...common, ...Object.keys(clusterEnvShape()), ...Object.keys(storeEnvShape())];
}

/**
 * The hard deadline of a graceful shutdown in every app (installGracefulShutdown's `timeoutMs`
 * default), in seconds: the platform must not SIGKILL before it.
 *
 * @throws Error when the default can no longer be read from the function's source.
 */
export function shutdownDeadlineSeconds(): number {
  const ms = /timeoutMs\s*=\s*([\d_]+)/.exec(installGracefulShutdown.toString())?.[1];
  if (!ms) throw new Error('cannot read the default timeoutMs of installGracefulShutdown (libs/nest-common); update shutdownDeadlineSeconds()');
  return Number(ms.replace(/_/g, '')) / 1000;
}

/** Seconds between SIGTERM and SIGKILL beyond the app's own deadline, for the last log lines and exit. */
export const GRACE_MARGIN_SECONDS = 5;

/** A canonical string for a setting's value, for comparisons (`default:` when unset). */
export function valueKey(setting: EnvSetting | undefined, spec: AppEnvSpec, key: string): string {
  if (!setting) return `default:${JSON.stringify(spec.defaults.get(key) ?? null)}`;
  const s = setting.source;
  switch (s.kind) {
    case 'value':
    case 'configMap':
      return `value:${s.value}`;
    case 'secret':
      return s.value !== undefined ? `value:${s.value}` : `secret:${s.name}/${s.key}`;
    case 'field':
      return `field:${s.fieldPath}`;
    case 'resource':
      return `resource:${s.resource}`;
  }
}

/** The value a setting gives the process, when it is known here. */
export function knownValue(setting: EnvSetting | undefined): string | undefined {
  if (!setting) return undefined;
  const s = setting.source;
  if (s.kind === 'value' || s.kind === 'configMap') return s.value;
  if (s.kind === 'secret') return s.value;
  return undefined;
}

/** The parsed value the app sees for `key` (the schema's default when unset), or undefined when unknown here. */
export function effective(w: Workload, spec: AppEnvSpec, key: string): unknown {
  const setting = w.env.get(key);
  if (!setting) return spec.defaults.get(key);
  const raw = knownValue(setting);
  if (raw === undefined || raw.trim() === '') return raw === undefined ? undefined : spec.defaults.get(key);
  const field = spec.schema.shape[key];
  const r = field?.safeParse(raw.trim());
  return r?.success ? r.data : undefined;
}

function placeholder(setting: EnvSetting, app: string): string | undefined {
  const s = setting.source;
  switch (s.kind) {
    case 'value':
    case 'configMap':
      return s.value;
    case 'secret':
      // An optional key may be absent at run time; a present one is opaque here (and differs from
      // the other keys: two Secret keys holding one value would be a finding of its own).
      return s.value ?? (s.optional ? undefined : `secret-value-from-kubernetes-${s.name}-${s.key}`);
    case 'field':
      return s.fieldPath === 'metadata.uid' ? '00000000-0000-4000-8000-000000000000' : s.fieldPath === 'metadata.namespace' ? 'default' : `${app}-0`;
    case 'resource':
      return '1';
  }
}

/**
 * Per-process checks: every variable set is one the app reads (typos), every required variable is
 * set, the must-set variables are set, secrets come from Secrets (k8s) or the host environment
 * (compose), the downward API is used for POD_*, and the values pass the app's own schema exactly
 * as at startup (only file-existence checks are skipped: those files exist in the pod).
 */
export function checkWorkloadEnv(w: Workload, spec: AppEnvSpec): string[] {
  const at = `${w.deployment}: ${w.where}`;
  const problems: string[] = [];
  for (const name of w.env.keys()) {
    if (!spec.keys.has(name) && !RUNTIME_ENV_PATTERN.test(name)) problems.push(`${at}: sets ${name}, which ${spec.app} does not read (typo or stale name?)`);
  }
  for (const key of spec.required) {
    const s = w.env.get(key);
    if (!s) problems.push(`${at}: required variable ${key} (no default in ${spec.app}'s schema) is not set`);
    else if (s.source.kind === 'secret' && s.source.optional) problems.push(`${at}: required variable ${key} comes from an optional Secret key`);
  }
  for (const key of MUST_SET) {
    if (spec.keys.has(key) && !w.env.has(key)) problems.push(`${at}: ${key} must be set explicitly (its default is for a single machine)`);
  }
  if (campaigns(w, spec) && !w.env.has('ELECTION_AGENT_ADDR')) problems.push(`${at}: ELECTION_AGENT_ADDR must be set explicitly (it campaigns for leadership)`);
  for (const [name, s] of w.env) {
    if (!SECRET_NAME.test(name)) continue;
    if (w.platform === 'k8s' && s.source.kind !== 'secret') problems.push(`${at}: ${name} must come from a Secret (secretKeyRef), not ${s.source.kind}`);
    if (w.platform === 'compose' && s.source.kind === 'value' && s.source.value !== '' && !s.source.interpolated) {
      problems.push(`${at}: ${name} is a literal; take it from the environment (\${${name}:-...})`);
    }
  }
  for (const [name, fieldPath] of Object.entries(DOWNWARD_API)) {
    if (w.platform !== 'k8s' || !spec.keys.has(name)) continue;
    const s = w.env.get(name);
    if (!s || s.source.kind !== 'field' || s.source.fieldPath !== fieldPath) problems.push(`${at}: ${name} must come from the downward API (fieldRef ${fieldPath})`);
  }
  const env: Record<string, string> = {};
  for (const [name, s] of w.env) {
    const v = placeholder(s, w.app);
    if (v !== undefined) env[name] = v;
  }
  try {
    loadConfig(spec.app, spec.schema as unknown as z.ZodObject<z.ZodRawShape>, env);
  } catch (err) {
    if (!(err instanceof ConfigValidationError)) throw err;
    for (const p of err.problems) {
      if (p.variable.endsWith('_FILE') && /readable file/.test(p.message)) continue;
      problems.push(`${at}: ${spec.app} would refuse to start: ${p.variable} ${p.message}`);
    }
  }
  return problems;
}

/**
 * Compose and Kubernetes set the same variables for an app: every name compose sets is set in the
 * Kubernetes base, and every name the base sets is set in compose, except the downward-API ones
 * (no pod fields in compose). Overlays may add variables (e.g. TLS files); they are checked
 * against the app's schema by {@link checkWorkloadEnv}.
 */
export function checkSameNames(compose: readonly Workload[], k8s: readonly Workload[]): string[] {
  const problems: string[] = [];
  const apps = new Set([...compose, ...k8s].map((w) => w.app));
  for (const app of apps) {
    const c = compose.filter((w) => w.app === app);
    const k = k8s.filter((w) => w.app === app);
    const where = k[0]?.deployment;
    if (c.length === 0 || !where) {
      problems.push(`${app}: runs in ${c.length === 0 ? 'Kubernetes but not in compose' : 'compose but not in Kubernetes'}`);
      continue;
    }
    const kNames = new Set(k.flatMap((w) => [...w.env.keys()]));
    const kPlatformOnly = new Set(k.flatMap((w) => [...w.env.values()].filter((s) => s.source.kind === 'field').map((s) => s.name)));
    for (const w of c) {
      for (const name of w.env.keys()) {
        if (!kNames.has(name)) problems.push(`${app}: compose ${w.where} sets ${name}, Kubernetes (${where}) does not`);
      }
      for (const name of kNames) {
        if (!w.env.has(name) && !kPlatformOnly.has(name)) problems.push(`${app}: Kubernetes (${where}) sets ${name}, compose ${w.where} does not`);
      }
    }
  }
  return problems;
}

/** Processes of one deployment agree on the shared variables (see {@link sharedKeys}). */
export function checkAgreement(workloads: readonly Workload[], specs: ReadonlyMap<string, AppEnvSpec>, keys: readonly string[]): string[] {
  const problems: string[] = [];
  for (const key of keys) {
    const seen = new Map<string, string[]>();
    for (const w of workloads) {
      const spec = specs.get(w.app);
      if (!spec?.keys.has(key)) continue;
      const v = valueKey(w.env.get(key), spec, key);
      seen.set(v, [...(seen.get(v) ?? []), w.where]);
    }
    if (seen.size > 1) {
      const detail = [...seen].map(([v, where]) => `${v} in ${where.join(', ')}`).join('; ');
      problems.push(`${workloads[0]?.deployment}: ${key} differs between processes: ${detail}`);
    }
  }
  return problems;
}

/** Apps that serve elections: a gRPC server keeping elections in a KV bucket (GRPC_PORT and ELECTION_KV_BUCKET). */
export function electionAgents(specs: Iterable<AppEnvSpec>): Set<string> {
  const agents = new Set<string>();
  for (const s of specs) if (s.keys.has('GRPC_PORT') && s.keys.has('ELECTION_KV_BUCKET')) agents.add(s.app);
  return agents;
}

/** Whether a process campaigns through the election agents: it reads ELECTION_AGENT_ADDR and, where it has the embedded-controller switch, the switch is on. */
export function campaigns(w: Workload, spec: AppEnvSpec): boolean {
  if (!spec.keys.has('ELECTION_AGENT_ADDR')) return false;
  return !spec.keys.has(EMBEDDED_CONTROLLER_SWITCH) || effective(w, spec, EMBEDDED_CONTROLLER_SWITCH) === true;
}

/** {@link campaigns} for a workload of any app in `specs`. */
function campaignsIn(w: Workload, specs: ReadonlyMap<string, AppEnvSpec>): boolean {
  const spec = specs.get(w.app);
  return spec !== undefined && campaigns(w, spec);
}

/** The embedded controller (defender switch on) and standalone controllers never run against one cluster. */
export function checkSingleControllerMode(workloads: readonly Workload[], specs: ReadonlyMap<string, AppEnvSpec>): string[] {
  const hasSwitch = (w: Workload) => specs.get(w.app)?.keys.has(EMBEDDED_CONTROLLER_SWITCH) === true;
  const embedded = workloads.filter((w) => hasSwitch(w) && campaignsIn(w, specs));
  const standalone = workloads.filter((w) => !hasSwitch(w) && campaignsIn(w, specs));
  return embedded.length > 0 && standalone.length > 0
    ? [`${workloads[0]?.deployment}: ${embedded.map((w) => w.where).join(', ')} host the controller and ${standalone.map((w) => w.where).join(', ')} run it standalone`]
    : [];
}

/**
 * When the agents require a token, every client sends one they accept: the same Secret (k8s), or a
 * value in the agents' comma-separated list where the values are known (compose, dev Secrets).
 */
export function checkElectionAuth(workloads: readonly Workload[], specs: ReadonlyMap<string, AppEnvSpec>): string[] {
  const agents = electionAgents(specs.values());
  const clients = workloads.filter((w) => campaignsIn(w, specs));
  const problems: string[] = [];
  for (const agent of workloads.filter((w) => agents.has(w.app))) {
    const a = agent.env.get('ELECTION_AUTH_TOKEN');
    if (!a) continue;
    const accepted = knownValue(a)
      ?.split(',')
      .map((t) => t.trim())
      .filter((t) => t.length > 0);
    for (const client of clients) {
      const c = client.env.get('ELECTION_AUTH_TOKEN');
      const at = `${client.deployment}: ${client.where}`;
      if (!c) {
        problems.push(`${at}: sends no ELECTION_AUTH_TOKEN, but ${agent.where} requires one`);
        continue;
      }
      const token = knownValue(c);
      if (accepted && token !== undefined) {
        if (!accepted.includes(token)) problems.push(`${at}: its ELECTION_AUTH_TOKEN is not among those ${agent.where} accepts`);
      } else if (a.source.kind === 'secret' && c.source.kind === 'secret' && a.source.name !== c.source.name) {
        problems.push(`${at}: ELECTION_AUTH_TOKEN from Secret ${c.source.name}, but ${agent.where} reads Secret ${a.source.name}`);
      } else if (a.source.kind !== c.source.kind) {
        problems.push(`${at}: ELECTION_AUTH_TOKEN comes from ${c.source.kind}, ${agent.where}'s from ${a.source.kind}`);
      }
    }
  }
  return problems;
}

/** Splits `host:port` (or a `dns:///host:port` target). */
export function hostPort(addr: string): { host: string; port: number } | undefined {
  const m = /^(?:dns:\/{3})?([^:/]+):(\d+)$/.exec(addr.trim());
  return m?.[1] && m[2] ? { host: m[1], port: Number(m[2]) } : undefined;
}

/**
 * Every address in a client's ELECTION_AGENT_ADDR reaches an election agent's gRPC port: in compose a
 * service of the agent app listening on that GRPC_PORT; in Kubernetes a Service in the render whose
 * port leads to the agent containers' GRPC_PORT.
 */
export function checkElectionAddresses(workloads: readonly Workload[], specs: ReadonlyMap<string, AppEnvSpec>, objects?: readonly K8sObject[]): string[] {
  const agents = electionAgents(specs.values());
  const problems: string[] = [];
  const agentWorkloads = workloads.filter((w) => agents.has(w.app));
  for (const client of workloads.filter((w) => campaignsIn(w, specs))) {
    const spec = specs.get(client.app);
    const addrs = spec ? ((effective(client, spec, 'ELECTION_AGENT_ADDR') as string[] | undefined) ?? []) : [];
    const at = `${client.deployment}: ${client.where}`;
    for (const addr of addrs) {
      const hp = hostPort(addr);
      if (!hp) {
        problems.push(`${at}: cannot read election agent address "${addr}"`);
        continue;
      }
      if (client.platform === 'compose') {
        const target = agentWorkloads.find((w) => w.where === `service ${hp.host}`);
        const targetSpec = target && specs.get(target.app);
        if (!target || !targetSpec) problems.push(`${at}: election agent address ${addr}: no election-agent service named ${hp.host}`);
        else {
          const grpc = effective(target, targetSpec, 'GRPC_PORT');
          if (grpc !== hp.port) problems.push(`${at}: ${addr}: ${hp.host} serves gRPC on ${String(grpc)}`);
        }
        continue;
      }
      const serviceName = hp.host.split('.')[0] ?? hp.host;
      const svc = objects?.find((o) => o.kind === 'Service' && o.metadata.name === serviceName) as
        | (K8sObject & { spec?: { selector?: Record<string, string>; ports?: { port: number; targetPort?: number | string }[] } })
        | undefined;
      if (!svc) {
        problems.push(`${at}: election agent address ${addr}: no Service ${serviceName} in the render`);
        continue;
      }
      const sp = svc.spec?.ports?.find((p) => p.port === hp.port);
      if (!sp) {
        problems.push(`${at}: Service ${serviceName} has no port ${hp.port}`);
        continue;
      }
      const selected = agentWorkloads.filter((w) => selects(svc.spec?.selector, w.object?.spec?.template.metadata?.labels));
      if (selected.length === 0) problems.push(`${at}: Service ${serviceName} selects no election-agent pods`);
      for (const w of selected) {
        const target = sp.targetPort ?? sp.port;
        const cp = typeof target === 'number' ? w.ports.find((p) => p.port === target) : w.ports.find((p) => p.name === target);
        const agentSpec = specs.get(w.app);
        const grpc = agentSpec && effective(w, agentSpec, 'GRPC_PORT');
        if (!cp) problems.push(`${at}: Service ${serviceName} port ${hp.port} targets ${String(target)}, which ${w.where} does not expose`);
        else if (cp.port !== grpc) problems.push(`${at}: Service ${serviceName} port ${hp.port} leads to container port ${cp.port}, but the agent serves gRPC on ${String(grpc)}`);
      }
    }
  }
  return problems;
}

/** True when every selector label is on the pod (an empty or missing selector selects nothing here). */
export function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/**
 * Ports and shutdown follow the configuration: the container exposes the app's effective HTTP_PORT
 * (named `http` in k8s) and GRPC_PORT (`grpc`); the platform waits longer than the app's drain
 * (SHUTDOWN_DRAIN_TIMEOUT_SECONDS, when it reads one) and its shutdown deadline before SIGKILL;
 * STORE_BACKEND is cassandra (several processes on several machines share the store).
 */
export function checkRuntimeFit(w: Workload, spec: AppEnvSpec, deadlineSeconds: number): string[] {
  const at = `${w.deployment}: ${w.where}`;
  const problems: string[] = [];
  for (const [key, portName] of [['HTTP_PORT', 'http'], ['GRPC_PORT', 'grpc']] as const) {
    if (!spec.keys.has(key)) continue;
    const port = effective(w, spec, key);
    if (w.platform === 'k8s') {
      const p = w.ports.find((x) => x.name === portName);
      if (!p) problems.push(`${at}: no container port named ${portName}`);
      else if (p.port !== port) problems.push(`${at}: container port ${portName} is ${p.port}, ${key} is ${String(port)}`);
    } else if (key === 'HTTP_PORT' && !w.ports.some((p) => p.port === port)) {
      problems.push(`${at}: publishes no port for ${key}=${String(port)}`);
    }
  }
  for (const p of w.ports) {
    const known = [effective(w, spec, 'HTTP_PORT'), effective(w, spec, 'GRPC_PORT')];
    if (!known.includes(p.port)) problems.push(`${at}: port ${p.port} is neither HTTP_PORT nor GRPC_PORT of ${spec.app}`);
  }
  const drain = spec.keys.has('SHUTDOWN_DRAIN_TIMEOUT_SECONDS') ? Number(effective(w, spec, 'SHUTDOWN_DRAIN_TIMEOUT_SECONDS')) : 0;
  const needed = Math.max(drain, deadlineSeconds) + GRACE_MARGIN_SECONDS;
  if ((w.gracePeriodSeconds ?? 0) < needed) {
    problems.push(
      `${at}: ${w.platform === 'k8s' ? 'terminationGracePeriodSeconds' : 'stop_grace_period'} ${w.gracePeriodSeconds ?? 0}s < ${needed}s ` +
        `(max(drain ${drain}s, shutdown deadline ${deadlineSeconds}s) + ${GRACE_MARGIN_SECONDS}s)`,
    );
  }
  if (spec.keys.has('STORE_BACKEND') && effective(w, spec, 'STORE_BACKEND') !== 'cassandra') {
    problems.push(`${at}: STORE_BACKEND must be cassandra (SQLite is one file on one machine)`);
  }
  return problems;
}

/** In Kubernetes, a `*_FILE` path lies in a Secret or ConfigMap volume mounted into the container. */
export function checkFileVariables(w: Workload): string[] {
  if (w.platform !== 'k8s' || !w.container) return [];
  const problems: string[] = [];
  const volumes = w.object?.spec?.template.spec?.volumes ?? [];
  for (const [name, s] of w.env) {
    if (!name.endsWith('_FILE')) continue;
    const path = knownValue(s);
    if (path === undefined) continue;
    const mount = (w.container.volumeMounts ?? []).find((m) => path.startsWith(m.mountPath.replace(/\/?$/, '/')));
    const at = `${w.deployment}: ${w.where}: ${name}=${path}`;
    if (!mount) {
      problems.push(`${at} is not under any volumeMount`);
      continue;
    }
    const vol = volumes.find((v) => v.name === mount.name);
    const projected = vol?.secret ?? vol?.configMap;
    if (!projected) {
      problems.push(`${at}: volume ${mount.name} is not a Secret or ConfigMap`);
      continue;
    }
    const rel = path.slice(mount.mountPath.replace(/\/?$/, '/').length);
    if (projected.items && !projected.items.some((i) => i.path === rel)) problems.push(`${at}: volume ${mount.name} projects no item at ${rel}`);
  }
  return problems;
}

/** Compose: POD_NAME and POD_UID, when set, differ between the services of an app (they identify a process). */
export function checkComposeIdentities(workloads: readonly Workload[]): string[] {
  const problems: string[] = [];
  for (const key of ['POD_NAME', 'POD_UID']) {
    const seen = new Map<string, string>();
    for (const w of workloads) {
      const v = knownValue(w.env.get(key));
      if (!v) continue;
      const other = seen.get(`${w.app}\u0000${v}`);
      if (other) problems.push(`compose: ${w.where} and ${other} share ${key}=${v}`);
      seen.set(`${w.app}\u0000${v}`, w.where);
    }
  }
  return problems;
}

/**
 * Compose: the http(s) URLs in `*_URL`/`*_URLS` settings name app services and their HTTP_PORT
 * (e.g. the dashboard's CONTROLLER_URLS).
 */
export function checkComposeUrls(workloads: readonly Workload[], specs: ReadonlyMap<string, AppEnvSpec>): string[] {
  const problems: string[] = [];
  for (const w of workloads) {
    const spec = specs.get(w.app);
    if (!spec) continue;
    for (const key of [...spec.keys].filter((k) => /_URLS?$/.test(k))) {
      const v = effective(w, spec, key);
      for (const url of (Array.isArray(v) ? v : typeof v === 'string' ? [v] : []) as string[]) {
        const u = new URL(url);
        const target = workloads.find((t) => t.where === `service ${u.hostname}`);
        const targetSpec = target && specs.get(target.app);
        const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
        if (!target || !targetSpec) problems.push(`compose: ${w.where}: ${key} names ${u.hostname}, which is no app service`);
        else if (effective(target, targetSpec, 'HTTP_PORT') !== port) problems.push(`compose: ${w.where}: ${key} uses port ${port}, ${u.hostname} listens on ${String(effective(target, targetSpec, 'HTTP_PORT'))}`);
      }
    }
  }
  return problems;
}
