import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { parse } from 'yaml';
import { K8sObject, ref } from './kustomize';

/** Where the value of one environment variable comes from. */
export type EnvSource =
  /** A literal (compose: after `${VAR:-default}` interpolation; `interpolated` when it came from the host environment). */
  | { kind: 'value'; value: string; interpolated: boolean }
  | { kind: 'configMap'; name: string; key: string; value: string }
  /** `value` when the Secret is part of the render (a development secretGenerator). */
  | { kind: 'secret'; name: string; key: string; optional: boolean; value?: string }
  | { kind: 'field'; fieldPath: string }
  | { kind: 'resource'; resource: string };

export interface EnvSetting {
  readonly name: string;
  readonly source: EnvSource;
}

/** One process definition: a compose service or a container of a Kubernetes Deployment. */
export interface Workload {
  readonly platform: 'compose' | 'k8s';
  /** `compose`, or the kustomization rendered (`k8s/overlays/dev`, ...). */
  readonly deployment: string;
  /** `service defender-1`, `Deployment/defender container defender`. */
  readonly where: string;
  /** The app (apps/<app>) this process runs. */
  readonly app: string;
  readonly env: ReadonlyMap<string, EnvSetting>;
  /** Container-side ports: compose `ports`, k8s container ports (by name when named). */
  readonly ports: readonly { name?: string; port: number }[];
  /** Seconds between SIGTERM and SIGKILL (compose stop_grace_period, k8s terminationGracePeriodSeconds). */
  readonly gracePeriodSeconds: number | undefined;
  /** The Deployment (k8s only). */
  readonly object?: IDeployment & K8sObject;
  /** The container (k8s only). */
  readonly container?: IContainer;
}

export interface Extracted {
  readonly workloads: Workload[];
  readonly problems: string[];
}

// ---------------------------------------------------------------- Kubernetes

function decodeSecret(o: K8sObject): Map<string, string> {
  const out = new Map<string, string>();
  const data = (o['data'] ?? {}) as Record<string, string>;
  for (const [k, v] of Object.entries(data)) out.set(k, Buffer.from(v, 'base64').toString('utf8'));
  const stringData = (o['stringData'] ?? {}) as Record<string, string>;
  for (const [k, v] of Object.entries(stringData)) out.set(k, v);
  return out;
}

/**
 * The app containers of every Deployment in a render, with each environment variable resolved to
 * its source (envFrom ConfigMaps expanded; later sources win, `env` over `envFrom` as in the kubelet).
 * A container whose name is not an app, or a reference that cannot be resolved, is a problem.
 */
export function k8sWorkloads(deployment: string, objects: readonly K8sObject[], apps: readonly string[]): Extracted {
  const problems: string[] = [];
  const workloads: Workload[] = [];
  const configMaps = new Map(objects.filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata.name, (o['data'] ?? {}) as Record<string, string>]));
  const secrets = new Map(objects.filter((o) => o.kind === 'Secret').map((o) => [o.metadata.name, decodeSecret(o)]));

  for (const o of objects) {
    if (o.kind !== 'Deployment') continue;
    const d = o as IDeployment & K8sObject;
    const pod = d.spec?.template.spec;
    for (const c of pod?.containers ?? []) {
      const where = `${ref(o)} container ${c.name}`;
      if (!apps.includes(c.name)) {
        problems.push(`${deployment}: ${where}: container name is not an app (${apps.join(', ')})`);
        continue;
      }
      const env = new Map<string, EnvSetting>();
      for (const from of c.envFrom ?? []) {
        if (from.prefix) problems.push(`${deployment}: ${where}: envFrom prefix "${from.prefix}" hides the variable names`);
        if (from.configMapRef) {
          const name = from.configMapRef.name ?? '';
          const data = configMaps.get(name);
          if (!data) {
            problems.push(`${deployment}: ${where}: envFrom ConfigMap ${name} is not in the render`);
            continue;
          }
          for (const [key, value] of Object.entries(data)) env.set(key, { name: key, source: { kind: 'configMap', name, key, value } });
        }
        if (from.secretRef) {
          const name = from.secretRef.name ?? '';
          const data = secrets.get(name);
          if (!data) {
            problems.push(`${deployment}: ${where}: envFrom Secret ${name} is created outside the manifests, so its keys (variable names) cannot be checked; use env[].valueFrom.secretKeyRef`);
            continue;
          }
          for (const [key, value] of data) env.set(key, { name: key, source: { kind: 'secret', name, key, optional: from.secretRef.optional === true, value } });
        }
      }
      for (const e of c.env ?? []) {
        const vf = e.valueFrom;
        if (vf?.configMapKeyRef) {
          const name = vf.configMapKeyRef.name ?? '';
          const value = configMaps.get(name)?.[vf.configMapKeyRef.key];
          if (value === undefined && vf.configMapKeyRef.optional !== true) {
            problems.push(`${deployment}: ${where}: ${e.name} refers to missing ConfigMap key ${name}/${vf.configMapKeyRef.key}`);
          }
          env.set(e.name, { name: e.name, source: { kind: 'configMap', name, key: vf.configMapKeyRef.key, value: value ?? '' } });
        } else if (vf?.secretKeyRef) {
          const name = vf.secretKeyRef.name ?? '';
          const key = vf.secretKeyRef.key;
          const rendered = secrets.get(name);
          if (rendered && !rendered.has(key) && vf.secretKeyRef.optional !== true) {
            problems.push(`${deployment}: ${where}: ${e.name} refers to key "${key}" that Secret ${name} does not have`);
          }
          env.set(e.name, { name: e.name, source: { kind: 'secret', name, key, optional: vf.secretKeyRef.optional === true, value: rendered?.get(key) } });
        } else if (vf?.fieldRef) {
          env.set(e.name, { name: e.name, source: { kind: 'field', fieldPath: vf.fieldRef.fieldPath } });
        } else if (vf?.resourceFieldRef) {
          env.set(e.name, { name: e.name, source: { kind: 'resource', resource: vf.resourceFieldRef.resource } });
        } else {
          env.set(e.name, { name: e.name, source: { kind: 'value', value: e.value ?? '', interpolated: false } });
        }
      }
      workloads.push({
        platform: 'k8s',
        deployment,
        where,
        app: c.name,
        env,
        ports: (c.ports ?? []).map((p) => ({ name: p.name, port: p.containerPort })),
        gracePeriodSeconds: pod?.terminationGracePeriodSeconds ?? 30,
        object: d,
        container: c,
      });
    }
  }
  return { workloads, problems };
}

// ---------------------------------------------------------------- docker compose

/** A compose file after YAML merge keys (`<<`) are applied. */
export interface ComposeFile {
  name?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | number | { target: number; published?: string | number; host_ip?: string })[];
  depends_on?: string[] | Record<string, { condition?: string; required?: boolean }>;
  healthcheck?: { test?: string | string[]; interval?: string; timeout?: string; retries?: number; start_period?: string; disable?: boolean };
  profiles?: string[];
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  stop_grace_period?: string;
  command?: string | string[];
  [key: string]: unknown;
}

/** Parses a compose file with YAML 1.1 merge keys, as docker compose does. */
export function parseCompose(text: string): ComposeFile {
  return parse(text, { merge: true }) as ComposeFile;
}

const INTERPOLATION = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

/**
 * Compose interpolation as on a machine with none of the variables set: `${X:-d}`/`${X-d}` -> `d`,
 * `${X}` -> '' (a problem: compose would warn). `$$` is a literal `$`.
 */
export function interpolate(value: string): { value: string; interpolated: boolean; unset: string[] } {
  const unset: string[] = [];
  let interpolated = false;
  const out = value.split('$$').map((chunk) => chunk.replace(INTERPOLATION, (_m, braced: string | undefined, op: string | undefined, arg: string | undefined, bare: string | undefined) => {
    interpolated = true;
    const name = braced ?? bare ?? '';
    if (op === ':-' || op === '-') return arg ?? '';
    if (op === ':+' || op === '+') return '';
    unset.push(name);
    return '';
  }));
  return { value: out.join('$'), interpolated, unset };
}

/** Seconds of a compose duration such as `45s`, `1m30s`, `500ms`. */
export function composeDurationSeconds(d: string): number {
  let total = 0;
  const re = /(\d+(?:\.\d+)?)(ms|us|h|m|s)/g;
  let m: RegExpExecArray | null;
  let consumed = '';
  while ((m = re.exec(d)) !== null) {
    const n = Number(m[1]);
    total += m[2] === 'h' ? n * 3600 : m[2] === 'm' ? n * 60 : m[2] === 's' ? n : m[2] === 'ms' ? n / 1000 : n / 1e6;
    consumed += m[0];
  }
  if (consumed !== d) throw new Error(`not a compose duration: "${d}"`);
  return total;
}

/** The app a compose service builds (`apps/<app>/Dockerfile`), or undefined for infrastructure images. */
export function composeServiceApp(s: ComposeService, apps: readonly string[]): string | undefined {
  if (typeof s.build !== 'object' || !s.build.dockerfile) return undefined;
  const app = /^(?:\.\/)?apps\/([^/]+)\/Dockerfile$/.exec(s.build.dockerfile)?.[1];
  return app && apps.includes(app) ? app : undefined;
}

/** Container-side port of a compose `ports` entry. */
export function composeContainerPort(p: string | number | { target: number }): number {
  if (typeof p === 'number') return p;
  if (typeof p === 'object') return p.target;
  const parts = (p.split('/')[0] ?? '').split(':');
  return Number(parts[parts.length - 1]);
}

/** The app services of a compose file with their environment (after interpolation). */
export function composeWorkloads(file: ComposeFile, apps: readonly string[]): Extracted {
  const problems: string[] = [];
  const workloads: Workload[] = [];
  for (const [name, s] of Object.entries(file.services ?? {})) {
    const app = composeServiceApp(s, apps);
    if (!app) continue;
    const where = `service ${name}`;
    const env = new Map<string, EnvSetting>();
    const entries: [string, string][] = Array.isArray(s.environment)
      ? s.environment.map((line) => {
          const i = line.indexOf('=');
          return i < 0 ? [line, ''] : [line.slice(0, i), line.slice(i + 1)];
        })
      : Object.entries(s.environment ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]);
    for (const [key, raw] of entries) {
      const r = interpolate(raw);
      if (r.unset.length > 0) problems.push(`compose: ${where}: ${key} uses \${${r.unset.join('}, ${')}} without a default`);
      env.set(key, { name: key, source: { kind: 'value', value: r.value, interpolated: r.interpolated } });
    }
    workloads.push({
      platform: 'compose',
      deployment: 'compose',
      where,
      app,
      env,
      ports: (s.ports ?? []).map((p) => ({ port: composeContainerPort(p) })),
      gracePeriodSeconds: s.stop_grace_period ? composeDurationSeconds(s.stop_grace_period) : 10,
    });
  }
  return { workloads, problems };
}
