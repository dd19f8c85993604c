import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import type { IService } from 'kubernetes-models/v1/Service';
import { heapCapMb } from '@defender/infra-harness';
import { selects } from './env-checks';
import { K8sObject, ref } from './kustomize';

type Deployment = IDeployment & K8sObject;
type Service = IService & K8sObject;
type Pdb = IPodDisruptionBudget & K8sObject;

const deployments = (objects: readonly K8sObject[]) => objects.filter((o): o is Deployment => o.kind === 'Deployment');

/** Probes from seed 000 (the defender's; the other apps use the same endpoints and timings). */
export const SEED_PROBES = {
  livenessProbe: { path: '/health/live', initialDelaySeconds: 30, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 },
  readinessProbe: { path: '/health/ready', initialDelaySeconds: 10, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 2 },
} as const;

/** Each container probes /health/live and /health/ready on its `http` port with the seed timings. */
export function checkProbes(objects: readonly K8sObject[]): string[] {
  const problems: string[] = [];
  for (const d of deployments(objects)) {
    for (const c of d.spec?.template.spec?.containers ?? []) {
      for (const [kind, want] of Object.entries(SEED_PROBES) as [keyof typeof SEED_PROBES, (typeof SEED_PROBES)[keyof typeof SEED_PROBES]][]) {
        const p: IProbe | undefined = c[kind];
        const at = `${ref(d)} container ${c.name}: ${kind}`;
        if (!p?.httpGet) {
          problems.push(`${at}: missing (httpGet ${want.path})`);
          continue;
        }
        if (p.httpGet.path !== want.path) problems.push(`${at}: path ${p.httpGet.path}, want ${want.path}`);
        if (p.httpGet.port !== 'http') problems.push(`${at}: port ${String(p.httpGet.port)}, want the named port http`);
        for (const k of ['initialDelaySeconds', 'periodSeconds', 'timeoutSeconds', 'failureThreshold'] as const) {
          if (p[k] !== want[k]) problems.push(`${at}: ${k} ${String(p[k])}, seed says ${want[k]}`);
        }
      }
    }
  }
  return problems;
}

/**
 * The "restricted" Pod Security Standard (the overlays' namespaces enforce it) plus what the images
 * allow: read-only root filesystem, no service-account token.
 */
export function checkPodSecurity(objects: readonly K8sObject[]): string[] {
  const problems: string[] = [];
  for (const d of deployments(objects)) {
    const pod = d.spec?.template.spec;
    const at = ref(d);
    if (!pod) continue;
    if (pod.hostNetwork || pod.hostPID || pod.hostIPC) problems.push(`${at}: uses host namespaces`);
    if (pod.automountServiceAccountToken !== false) problems.push(`${at}: automountServiceAccountToken must be false (no app talks to the API server)`);
    for (const v of pod.volumes ?? []) if (v.hostPath) problems.push(`${at}: hostPath volume ${v.name}`);
    const podSc = pod.securityContext ?? {};
    if (podSc.seccompProfile?.type !== 'RuntimeDefault') problems.push(`${at}: pod seccompProfile must be RuntimeDefault`);
    for (const c of [...(pod.initContainers ?? []), ...pod.containers] as IContainer[]) {
      const sc = c.securityContext ?? {};
      const where = `${at} container ${c.name}`;
      if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true) problems.push(`${where}: runAsNonRoot must be true`);
      if ((sc.runAsUser ?? podSc.runAsUser) === 0) problems.push(`${where}: runs as uid 0`);
      if (sc.privileged) problems.push(`${where}: privileged`);
      if (sc.allowPrivilegeEscalation !== false) problems.push(`${where}: allowPrivilegeEscalation must be false`);
      if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}: must drop ALL capabilities`);
      if ((sc.capabilities?.add ?? []).length > 0) problems.push(`${where}: adds capabilities`);
      if (sc.readOnlyRootFilesystem !== true) problems.push(`${where}: readOnlyRootFilesystem must be true (writable: emptyDir mounts)`);
    }
  }
  return problems;
}

function quantity(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  if (typeof q === 'number') return q;
  const m = /^(\d+(?:\.\d+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(q);
  if (!m) return undefined;
  const mult: Record<string, number> = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };
  return Number(m[1]) * (m[2] ? (mult[m[2]] ?? NaN) : 1);
}

/** Memory a Node process needs beyond its V8 old space: new space, code, native addons, buffers. */
export const NON_HEAP_ALLOWANCE_MIB = 128;

/**
 * CPU and memory requests on every container, a memory limit at or above the request, and room in
 * the limit for the V8 heap cap the process runs with (`--max-old-space-size` from the container's
 * NODE_OPTIONS, else from its image: `imageHeapCapMb` by container name) plus
 * {@link NON_HEAP_ALLOWANCE_MIB}: a limit below it gets the pod OOM-killed before V8 collects.
 */
export function checkResources(objects: readonly K8sObject[], imageHeapCapMb: Readonly<Record<string, number | undefined>> = {}): string[] {
  const problems: string[] = [];
  for (const d of deployments(objects)) {
    for (const c of d.spec?.template.spec?.containers ?? []) {
      const at = `${ref(d)} container ${c.name}`;
      const req = c.resources?.requests ?? {};
      const lim = c.resources?.limits ?? {};
      if (quantity(req['cpu']) === undefined) problems.push(`${at}: no CPU request`);
      const memReq = quantity(req['memory']);
      const memLim = quantity(lim['memory']);
      if (memReq === undefined) problems.push(`${at}: no memory request`);
      if (memLim === undefined) problems.push(`${at}: no memory limit`);
      if (memReq !== undefined && memLim !== undefined && memLim < memReq) problems.push(`${at}: memory limit below the request`);
      const own = c.env?.find((e) => e.name === 'NODE_OPTIONS');
      const cap = own ? heapCapMb(own.value) : imageHeapCapMb[c.name];
      if (cap !== undefined && memLim !== undefined && memLim < (Number(cap) + NON_HEAP_ALLOWANCE_MIB) * 1024 ** 2) {
        problems.push(`${at}: memory limit ${String(lim['memory'])} leaves no room for the V8 heap cap of ${String(cap)} MB + ${NON_HEAP_ALLOWANCE_MIB} Mi`);
      }
    }
  }
  return problems;
}

/**
 * Selectors hold together: each Deployment selects its own template; each has exactly one PDB that
 * still lets a pod be evicted and keeps at least one; each Service selects pods that expose its
 * target ports.
 */
export function checkSelectors(objects: readonly K8sObject[]): string[] {
  const problems: string[] = [];
  const ds = deployments(objects);
  const pdbs = objects.filter((o): o is Pdb => o.kind === 'PodDisruptionBudget');
  for (const d of ds) {
    const labels = d.spec?.template.metadata?.labels;
    if (!selects(d.spec?.selector.matchLabels, labels)) problems.push(`${ref(d)}: selector does not match its pod template`);
    const mine = pdbs.filter((p) => selects(p.spec?.selector?.matchLabels, labels));
    const spec = mine[0]?.spec;
    if (mine.length !== 1 || !spec) {
      problems.push(`${ref(d)}: ${mine.length} PodDisruptionBudgets select it, want 1`);
      continue;
    }
    const replicas = d.spec?.replicas ?? 1;
    const maxUnavailable = spec.maxUnavailable !== undefined ? Number(spec.maxUnavailable) : replicas - Number(spec.minAvailable ?? 0);
    if (!(maxUnavailable >= 1)) problems.push(`${ref(d)}: its PDB allows no eviction (node drains would hang)`);
    if (!(maxUnavailable < replicas)) problems.push(`${ref(d)}: its PDB allows all ${replicas} pods down at once`);
  }
  for (const s of objects.filter((o): o is Service => o.kind === 'Service')) {
    const selected = ds.filter((d) => selects(s.spec?.selector, d.spec?.template.metadata?.labels));
    if (selected.length === 0) {
      problems.push(`${ref(s)}: selects no Deployment's pods`);
      continue;
    }
    for (const p of s.spec?.ports ?? []) {
      const target = p.targetPort ?? p.port;
      for (const d of selected) {
        const ports = (d.spec?.template.spec?.containers ?? []).flatMap((c) => c.ports ?? []);
        const ok = typeof target === 'number' ? ports.some((cp) => cp.containerPort === target) : ports.some((cp) => cp.name === target);
        if (!ok) problems.push(`${ref(s)}: port ${p.name ?? p.port} targets ${String(target)}, which ${ref(d)} does not expose`);
      }
    }
  }
  return problems;
}

/** Images name their app; with `pinned`, a registry path and a fixed tag (no `latest`). */
export function checkImages(objects: readonly K8sObject[], pinned: boolean): string[] {
  const problems: string[] = [];
  for (const d of deployments(objects)) {
    for (const c of d.spec?.template.spec?.containers ?? []) {
      const image = c.image ?? '';
      const at = `${ref(d)} container ${c.name}: image ${image}`;
      const m = /^(?:(.+)\/)?([^/:@]+)(?::([^@]+))?(?:@(.+))?$/.exec(image);
      if (!m || m[2] !== c.name) {
        problems.push(`${at}: should be the ${c.name} image`);
        continue;
      }
      if (!pinned) continue;
      if (!m[3] && !m[4]) problems.push(`${at}: no tag or digest`);
      if (m[3] === 'latest') problems.push(`${at}: "latest" is not a release`);
      if (!m[1]?.includes('.')) problems.push(`${at}: no registry host`);
    }
  }
  return problems;
}

/** Every namespaced object lives in `ns`, which the render creates with the restricted Pod Security level. */
export function checkNamespace(objects: readonly K8sObject[], ns: string): string[] {
  const problems: string[] = [];
  const namespace = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === ns);
  if (!namespace) problems.push(`no Namespace ${ns} in the render`);
  else if (namespace.metadata.labels?.['pod-security.kubernetes.io/enforce'] !== 'restricted') problems.push(`Namespace ${ns} does not enforce the restricted Pod Security Standard`);
  for (const o of objects) {
    if (o.kind === 'Namespace') continue;
    if (o.metadata.namespace !== ns) problems.push(`${ref(o)}: namespace ${o.metadata.namespace ?? '(none)'}, want ${ns}`);
  }
  return problems;
}

/** Names of Secrets the Deployments use that the render does not create (created by the operator). */
export function externalSecrets(objects: readonly K8sObject[]): string[] {
  const rendered = new Set(objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name));
  const used = new Set<string>();
  for (const d of deployments(objects)) {
    const pod = d.spec?.template.spec;
    for (const v of pod?.volumes ?? []) if (v.secret?.secretName) used.add(v.secret.secretName);
    for (const c of pod?.containers ?? []) {
      for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef?.name) used.add(e.valueFrom.secretKeyRef.name);
      for (const f of c.envFrom ?? []) if (f.secretRef?.name) used.add(f.secretRef.name);
    }
  }
  return [...used].filter((s) => !rendered.has(s)).sort();
}

/** ServiceMonitors select a Service that has the endpoint's named port. */
export function checkServiceMonitors(objects: readonly K8sObject[]): string[] {
  const problems: string[] = [];
  const services = objects.filter((o): o is Service => o.kind === 'Service');
  for (const sm of objects.filter((o) => o.kind === 'ServiceMonitor')) {
    const spec = sm['spec'] as { selector?: { matchLabels?: Record<string, string> }; endpoints?: { port?: string }[] };
    const matched = services.filter((s) => selects(spec.selector?.matchLabels, s.metadata.labels));
    if (matched.length === 0) problems.push(`${ref(sm)}: selects no Service`);
    for (const ep of spec.endpoints ?? []) {
      for (const s of matched) {
        if (!(s.spec?.ports ?? []).some((p) => p.name === ep.port)) problems.push(`${ref(sm)}: Service ${s.metadata.name} has no port named ${ep.port}`);
      }
    }
  }
  return problems;
}
