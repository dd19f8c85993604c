import { AppEnvSpec, loadAppEnvSpecs } from './lib/app-env';
import { campaigns, effective, electionAgents } from './lib/env-checks';
import { K8sObject, parseManifests, render } from './lib/kustomize';
import { describeWithKustomize } from './lib/kustomize-available';
import { allowed, Endpoint } from './lib/netpol';
import { k8sWorkloads, Workload } from './lib/workloads';

/**
 * The NetworkPolicies admit exactly the connections the apps' configuration implies (NATS,
 * Cassandra, DNS, election clients to the agents, Prometheus to the HTTP ports) and refuse others.
 */

const specs = loadAppEnvSpecs();
const specByApp = new Map(specs.map((s) => [s.app, s]));
const apps = specs.map((s) => s.app);
const agents = electionAgents(specs);

const OVERLAYS = { 'k8s/overlays/dev': 'defender-dev', 'k8s/overlays/prod': 'defender' } as const;

/** A pod of the rendered Deployment that runs `w`. */
function podOf(w: Workload, objects: readonly K8sObject[], ns: string): Endpoint & { kind: 'pod' } {
  const nsObject = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === ns);
  return {
    kind: 'pod',
    namespace: ns,
    namespaceLabels: { 'kubernetes.io/metadata.name': ns, ...(nsObject?.metadata.labels ?? {}) },
    labels: w.object?.spec?.template.metadata?.labels ?? {},
    ports: w.ports,
  };
}

function otherPod(ns: string, labels: Record<string, string> = {}): Endpoint {
  return { kind: 'pod', namespace: ns, namespaceLabels: { 'kubernetes.io/metadata.name': ns }, labels };
}

/** Where a configured service may run: an in-cluster pod (namespace from the DNS name) or an outside address. */
function destinations(host: string, ns: string): Endpoint[] {
  const parts = host.split('.');
  const podNs = parts.length >= 2 && !/^\d+$/.test(parts[1]!) ? parts[1]! : ns;
  return [otherPod(podNs, { 'app.kubernetes.io/name': parts[0]! }), { kind: 'external', ip: '198.51.100.7' }];
}

function natsTargets(w: Workload, spec: AppEnvSpec): { host: string; port: number }[] {
  return ((effective(w, spec, 'NATS_SERVERS') as string[] | undefined) ?? []).map((u) => {
    const m = /^(?:[a-z]+:\/\/)?([^:/]+)(?::(\d+))?$/.exec(u)!;
    return { host: m[1]!, port: m[2] ? Number(m[2]) : 4222 };
  });
}

function cassandraTargets(w: Workload, spec: AppEnvSpec): { host: string; port: number }[] {
  if (!spec.keys.has('CASSANDRA_HOSTS') || effective(w, spec, 'STORE_BACKEND') !== 'cassandra') return [];
  return ((effective(w, spec, 'CASSANDRA_HOSTS') as string[] | undefined) ?? []).map((h) => {
    const [host, port] = h.split(':');
    return { host: host!, port: port ? Number(port) : 9042 };
  });
}

describeWithKustomize('NetworkPolicies', (k) => {
  describe.each(Object.entries(OVERLAYS))('%s', (dir, ns) => {
    let objects: K8sObject[];
    let workloads: Workload[];
    beforeAll(() => {
      objects = render(k, dir);
      workloads = k8sWorkloads(dir, objects, apps).workloads;
    });

    it('deny by default: every app pod is selected for ingress and egress', () => {
      for (const w of workloads) {
        const pod = podOf(w, objects, ns);
        expect({ app: w.app, egressToWeb: allowed(objects, pod, { kind: 'external', ip: '203.0.113.5' }, 443) }).toEqual({ app: w.app, egressToWeb: false });
        expect({ app: w.app, fromStranger: allowed(objects, otherPod(ns), pod, w.ports[0]!.port) }).toEqual({ app: w.app, fromStranger: false });
      }
    });

    it('let every app resolve names and reach its NATS servers, in the cluster or outside it', () => {
      for (const w of workloads) {
        const pod = podOf(w, objects, ns);
        expect({ app: w.app, dns: allowed(objects, pod, otherPod('kube-system', { 'k8s-app': 'kube-dns' }), 53, 'UDP') }).toEqual({ app: w.app, dns: true });
        const targets = natsTargets(w, specByApp.get(w.app)!);
        expect(targets.length).toBeGreaterThan(0);
        for (const t of targets) {
          for (const dst of destinations(t.host, ns)) {
            expect({ app: w.app, nats: `${t.host}:${t.port}`, dst: dst.kind, ok: allowed(objects, pod, dst, t.port) }).toEqual({
              app: w.app,
              nats: `${t.host}:${t.port}`,
              dst: dst.kind,
              ok: true,
            });
          }
        }
      }
    });

    it('let the apps that use Cassandra reach its CQL port', () => {
      const users = workloads.filter((w) => cassandraTargets(w, specByApp.get(w.app)!).length > 0);
      expect(users.map((w) => w.app).sort()).toEqual(specs.filter((s) => s.keys.has('CASSANDRA_HOSTS')).map((s) => s.app).sort());
      for (const w of users) {
        for (const t of cassandraTargets(w, specByApp.get(w.app)!)) {
          for (const dst of destinations(t.host, ns)) {
            expect({ app: w.app, dst: dst.kind, ok: allowed(objects, podOf(w, objects, ns), dst, t.port) }).toEqual({ app: w.app, dst: dst.kind, ok: true });
          }
        }
      }
    });

    it("admit election clients, and only them, to the agents' gRPC port", () => {
      const agentWorkloads = workloads.filter((w) => agents.has(w.app));
      expect(agentWorkloads.length).toBeGreaterThan(0);
      for (const agent of agentWorkloads) {
        const dst = podOf(agent, objects, ns);
        const grpc = effective(agent, specByApp.get(agent.app)!, 'GRPC_PORT') as number;
        for (const w of workloads.filter((x) => x.app !== agent.app)) {
          expect({ from: w.app, ok: allowed(objects, podOf(w, objects, ns), dst, grpc) }).toEqual({ from: w.app, ok: campaigns(w, specByApp.get(w.app)!) });
        }
        expect(allowed(objects, otherPod(ns, { 'app.kubernetes.io/part-of': 'defender' }), dst, grpc)).toBe(false);
      }
    });

    it('let apps reach the HTTP services named in their *_URL(S) settings', () => {
      let checked = 0;
      for (const w of workloads) {
        const spec = specByApp.get(w.app)!;
        for (const key of [...spec.keys].filter((k) => /_URLS?$/.test(k))) {
          const v = effective(w, spec, key);
          for (const url of (Array.isArray(v) ? v : v === undefined ? [] : [v]) as string[]) {
            const u = new URL(url);
            const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === u.hostname.split('.')[0]);
            const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
            const target = workloads.find((t) => svc && Object.entries((svc['spec'] as { selector?: Record<string, string> }).selector ?? {}).every(([k2, v2]) => t.object?.spec?.template.metadata?.labels?.[k2] === v2));
            expect({ app: w.app, key, url, service: Boolean(svc && target) }).toEqual({ app: w.app, key, url, service: true });
            const sp = ((svc!['spec'] as { ports?: { port: number; targetPort?: string | number }[] }).ports ?? []).find((p) => p.port === port);
            const containerPort = typeof sp?.targetPort === 'string' ? target!.ports.find((p) => p.name === sp.targetPort)?.port : (sp?.targetPort ?? port);
            expect({ app: w.app, url, ok: containerPort !== undefined && allowed(objects, podOf(w, objects, ns), podOf(target!, objects, ns), containerPort) }).toEqual({ app: w.app, url, ok: true });
            checked++;
          }
        }
      }
      expect(checked).toBeGreaterThan(0);
    });

    it('admit users to the dashboard only from namespaces labelled defender.io/dashboard-access', () => {
      for (const w of workloads.filter((x) => x.app === 'dashboard')) {
        const http = effective(w, specByApp.get(w.app)!, 'HTTP_PORT') as number;
        const ingress: Endpoint = { kind: 'pod', namespace: 'ingress', namespaceLabels: { 'defender.io/dashboard-access': 'true' }, labels: {} };
        expect(allowed(objects, ingress, podOf(w, objects, ns), http)).toBe(true);
        expect(allowed(objects, otherPod('default'), podOf(w, objects, ns), http)).toBe(false);
      }
    });

    it('admit Prometheus (namespace monitoring) to every HTTP port, and no other namespace', () => {
      const prometheus = otherPod('monitoring', { 'app.kubernetes.io/name': 'prometheus' });
      for (const w of workloads) {
        const http = effective(w, specByApp.get(w.app)!, 'HTTP_PORT') as number;
        const dst = podOf(w, objects, ns);
        expect({ app: w.app, monitoring: allowed(objects, prometheus, dst, http), other: allowed(objects, otherPod('default'), dst, http) }).toEqual({
          app: w.app,
          monitoring: true,
          other: false,
        });
      }
    });
  });
});

describe('the NetworkPolicy evaluator', () => {
  const policies = parseManifests(
    `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: { name: api, namespace: a }
spec:
  podSelector: { matchLabels: { role: api } }
  policyTypes: [Ingress]
  ingress:
    - from:
        - podSelector: { matchLabels: { role: web } }
        - namespaceSelector: { matchLabels: { team: ops } }
          podSelector: { matchExpressions: [{ key: tier, operator: In, values: [probe] }] }
      ports: [{ protocol: TCP, port: http }]
`,
    'fixture',
  );
  const api: Endpoint = { kind: 'pod', namespace: 'a', namespaceLabels: {}, labels: { role: 'api' }, ports: [{ name: 'http', port: 8080 }] };
  const pod = (namespace: string, labels: Record<string, string>, nsLabels: Record<string, string> = {}): Endpoint => ({ kind: 'pod', namespace, namespaceLabels: nsLabels, labels });

  it.each([
    ['a peer pod of the same namespace on the named port', pod('a', { role: 'web' }), 8080, true],
    ['the same pod on another port', pod('a', { role: 'web' }), 9090, false],
    ['a pod with the right labels in another namespace', pod('b', { role: 'web' }), 8080, false],
    ['a pod matching namespace and pod selector together', pod('b', { tier: 'probe' }, { team: 'ops' }), 8080, true],
    ['a pod matching only the namespace selector', pod('b', { tier: 'other' }, { team: 'ops' }), 8080, false],
    ['an address outside the cluster', { kind: 'external', ip: '203.0.113.1' } as Endpoint, 8080, false],
  ])('%s', (_name, src, port, expected) => {
    expect(allowed(policies, src, api, port)).toBe(expected);
  });

  it('leaves pods that no policy selects open', () => {
    expect(allowed(policies, pod('a', {}), pod('a', { role: 'db' }), 5432)).toBe(true);
  });
});
