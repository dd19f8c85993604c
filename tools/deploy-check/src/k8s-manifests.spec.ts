import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { loadAppEnvSpecs } from './lib/app-env';
import { checkKnownFields, validateSchemas } from './lib/k8s-schema';
import {
  checkImages,
  checkNamespace,
  checkPodSecurity,
  checkProbes,
  checkResources,
  checkSelectors,
  checkServiceMonitors,
  externalSecrets,
} from './lib/k8s-policy';
import { K8sObject, parseManifests, render, renderComposition } from './lib/kustomize';
import { describeWithKustomize } from './lib/kustomize-available';
import { readRepoFile } from './lib/repo';
import { heapCapMb, imageNodeOptions, imageRuntimeEnv, RUNTIME_ENV_PATTERN } from '@defender/infra-harness';

/**
 * The kustomize base, overlays and components render, every object is valid against the Kubernetes
 * (and Prometheus Operator) schemas with no unknown fields, and the objects hold together.
 */

const OVERLAYS = { 'k8s/overlays/dev': 'defender-dev', 'k8s/overlays/prod': 'defender' } as const;
const specs = loadAppEnvSpecs();
/** The V8 heap cap each app's image sets (the defender's), by container name. */
const imageHeapCaps = Object.fromEntries(['defender', 'assignment-controller', 'election-agent', 'dashboard'].map((a) => [a, heapCapMb(imageNodeOptions(a))]));

const deploymentsOf = (objects: readonly K8sObject[]) => objects.filter((o): o is IDeployment & K8sObject => o.kind === 'Deployment');

describeWithKustomize('kustomize renders', (k) => {
  const renders = new Map<string, K8sObject[]>();
  beforeAll(() => {
    renders.set('k8s/base', render(k, 'k8s/base'));
    for (const dir of Object.keys(OVERLAYS)) renders.set(dir, render(k, dir));
    renders.set(
      'k8s/base + components/service-monitor',
      renderComposition(k, { namespace: 'defender-monitoring-check', resources: ['k8s/base'], components: ['k8s/components/service-monitor'] }),
    );
  });
  const get = (dir: string) => renders.get(dir)!;

  it('renders the base, both overlays and the optional ServiceMonitor component', () => {
    for (const [dir, objects] of renders) expect({ dir, count: objects.length }).toEqual({ dir, count: expect.any(Number) });
    expect(get('k8s/base').some((o) => o.apiVersion.startsWith('monitoring.coreos.com'))).toBe(false);
    expect(get('k8s/base + components/service-monitor').filter((o) => o.kind === 'ServiceMonitor')).toHaveLength(3);
  });

  it.each(['k8s/base', ...Object.keys(OVERLAYS)])('%s: TLS to NATS for every app and to Cassandra for every store user, the CAs of the Secrets nats-tls and cassandra-tls mounted where the variables point', (dir) => {
    const deployments = deploymentsOf(get(dir));
    expect(deployments.map((d) => d.metadata?.name).sort()).toEqual(['assignment-controller', 'dashboard', 'defender', 'election-agent']);
    const store = new Set(['defender', 'assignment-controller', 'dashboard']);
    const configured = new Map(get(dir).filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata.name, (o as K8sObject & { data?: Record<string, string> }).data ?? {}]));
    for (const d of deployments) {
      const c = d.spec?.template.spec?.containers[0];
      const at = d.metadata?.name;
      const tls: [string, string, boolean][] = [['nats-tls', 'NATS_TLS_CA_FILE', true], ['cassandra-tls', 'CASSANDRA_TLS_CA_FILE', store.has(at ?? '')]];
      for (const [secret, variable, wanted] of tls) {
        const env = c?.env?.find((e) => e.name === variable)?.value;
        expect({ at, variable, env }).toEqual({ at, variable, env: wanted ? `/etc/defender/${secret}/ca.crt` : undefined });
        if (!wanted) continue;
        expect({ at, mount: c?.volumeMounts?.find((m) => m.name === secret) }).toEqual({ at, mount: { name: secret, mountPath: `/etc/defender/${secret}`, readOnly: true } });
        const volume = d.spec?.template.spec?.volumes?.find((v) => v.name === secret);
        // A Secret volume is required (no `optional`): without the CA the pod does not start.
        expect({ at, secret: volume?.secret?.secretName, items: volume?.secret?.items, optional: volume?.secret?.optional }).toEqual({ at, secret, items: [{ key: 'ca.crt', path: 'ca.crt' }], optional: undefined });
      }
      // The store users check the nodes' certificates for a configured name (pod addresses are rarely in them).
      const storeConfig = (c?.envFrom ?? []).map((f) => configured.get(f.configMapRef?.name ?? '') ?? {}).find((data) => 'CASSANDRA_HOSTS' in data);
      if (store.has(at ?? '')) expect({ at, serverName: storeConfig?.['CASSANDRA_TLS_SERVER_NAME'] }).toEqual({ at, serverName: expect.stringMatching(/^cassandra/) });
    }
  });

  it('production fails closed: every Secret reference but NATS_TOKEN is required (the base and dev keep them optional)', () => {
    const secretRefs = (objects: readonly K8sObject[]) =>
      deploymentsOf(objects).flatMap((d) =>
        (d.spec?.template.spec?.containers ?? []).flatMap((c) =>
          (c.env ?? []).filter((e) => e.valueFrom?.secretKeyRef).map((e) => ({ at: `${d.metadata?.name}/${c.name}/${e.name}`, optional: e.valueFrom?.secretKeyRef?.optional === true })),
        ),
      );
    const prod = secretRefs(get('k8s/overlays/prod'));
    expect(prod.length).toBeGreaterThan(10);
    expect(prod.filter((r) => r.optional && !r.at.endsWith('/NATS_TOKEN'))).toEqual([]);
    expect(prod.filter((r) => r.at.endsWith('/CASSANDRA_PASSWORD')).map((r) => r.optional)).toEqual([false, false, false]);
    expect(secretRefs(get('k8s/overlays/dev')).filter((r) => r.at.endsWith('/NATS_USER')).every((r) => r.optional)).toBe(true);
  });

  it('validates every object against its JSON schema (Kubernetes 1.27 OpenAPI, Prometheus Operator CRDs)', () => {
    expect([...renders].flatMap(([dir, objects]) => validateSchemas(objects, dir))).toEqual([]);
  });

  it('uses no field the schemas do not know (unknown fields would be pruned silently)', () => {
    expect(checkKnownFields(renders)).toEqual([]);
  });

  it.each(Object.entries(OVERLAYS))('%s puts everything in namespace %s, which enforces the restricted Pod Security Standard', (dir, ns) => {
    expect(checkNamespace(get(dir), ns)).toEqual([]);
  });

  it.each(Object.keys(OVERLAYS))('%s: pods meet the restricted profile with read-only root filesystems', (dir) => {
    expect(checkPodSecurity(get(dir))).toEqual([]);
  });

  it.each(Object.keys(OVERLAYS))('%s: probes as in the seeds, requests and memory limits on every container', (dir) => {
    expect(checkProbes(get(dir))).toEqual([]);
    expect(checkResources(get(dir), imageHeapCaps)).toEqual([]);
  });

  it.each(Object.keys(OVERLAYS))('%s: Deployments, PodDisruptionBudgets and Services select each other', (dir) => {
    expect(checkSelectors(get(dir))).toEqual([]);
  });

  it('pins images to a registry and a release tag in prod', () => {
    expect(checkImages(get('k8s/overlays/dev'), false)).toEqual([]);
    expect(checkImages(get('k8s/overlays/prod'), true)).toEqual([]);
  });

  it('runs the controllers and election agents highly available, the defender fleet at scale in prod', () => {
    for (const dir of Object.keys(OVERLAYS)) {
      const replicas = Object.fromEntries(deploymentsOf(get(dir)).map((d) => [d.metadata.name, d.spec?.replicas ?? 1]));
      expect({ dir, controller: replicas['assignment-controller']! >= 2, agents: replicas['election-agent']! >= 2 }).toEqual({ dir, controller: true, agents: true });
    }
    const prod = Object.fromEntries(deploymentsOf(get('k8s/overlays/prod')).map((d) => [d.metadata.name, d.spec?.replicas ?? 1]));
    expect(prod['defender']).toBeGreaterThanOrEqual(3);
  });

  it('replaces stable-ID holders old-pod-first, so a rolling update keeps every defender-<n> (and its chambers)', () => {
    // The apps that claim a stable ID are those reading POD_UID (the claim's identity).
    const claimers = specs.filter((s) => s.keys.has('POD_UID')).map((s) => s.app);
    expect(claimers).toContain('defender');
    for (const dir of Object.keys(OVERLAYS)) {
      for (const d of deploymentsOf(get(dir)).filter((x) => claimers.includes(x.metadata.name))) {
        expect({ dir, name: d.metadata.name, strategy: d.spec?.strategy }).toEqual({
          dir,
          name: d.metadata.name,
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
        });
      }
    }
  });

  it('documents every Secret the workloads need that the manifests do not create', () => {
    const readme = readRepoFile('k8s/README.md');
    for (const dir of Object.keys(OVERLAYS)) {
      const missing = externalSecrets(get(dir)).filter((name) => !readme.includes(`\`${name}\``));
      expect({ dir, undocumented: missing }).toEqual({ dir, undocumented: [] });
    }
    expect(externalSecrets(get('k8s/overlays/prod'))).toEqual(expect.arrayContaining(['defender-election', 'election-agent-tls', 'nats-tls', 'cassandra-tls']));
  });

  it('points the ServiceMonitors at the Services and their http ports', () => {
    expect(checkServiceMonitors(get('k8s/base + components/service-monitor'))).toEqual([]);
  });
});

describe('the schema checks catch what they are for', () => {
  const deployment = (container: Record<string, unknown>) =>
    parseManifests(
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'x', namespace: 'n' },
        spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'x', image: 'x', ...container }] } } },
      }),
      'fixture',
    );

  it('a wrongly typed field', () => {
    expect(validateSchemas(deployment({ ports: [{ containerPort: 'http' }] }), 'fixture')).toEqual([expect.stringContaining('containerPort must be integer')]);
  });

  it('a misspelt field', () => {
    const problems = checkKnownFields(new Map([['fixture', deployment({ livenessprobe: { httpGet: { path: '/health/live', port: 8080 } } })]]));
    expect(problems).toEqual([expect.stringMatching(/fixture: Deployment\/x .*livenessprobe.* does not exist in type 'IContainer'/)]);
  });

  it('a memory limit without room for the V8 heap cap', () => {
    const resources = { requests: { cpu: '1', memory: '128Mi' }, limits: { memory: '256Mi' } };
    expect(checkResources(deployment({ resources }), { x: 192 })).toEqual([
      'Deployment/x (ns n) container x: memory limit 256Mi leaves no room for the V8 heap cap of 192 MB + 128 Mi',
    ]);
    // The container's own NODE_OPTIONS overrides the image's.
    expect(checkResources(deployment({ resources, env: [{ name: 'NODE_OPTIONS', value: '--max-old-space-size=96' }] }), { x: 192 })).toEqual([]);
    expect(checkResources(deployment({ resources }), {})).toEqual([]);
  });

  it("reads the defender image's heap cap (the RSS target relies on it), and no other image sets one", () => {
    expect(imageHeapCaps).toEqual({ defender: expect.any(Number), 'assignment-controller': undefined, 'election-agent': undefined, dashboard: undefined });
    expect(heapCapMb('--enable-source-maps --max-old-space-size=96')).toBe(96);
    expect(heapCapMb('--max-old-space-size-x=96')).toBeUndefined();
    // The runtime environment the harness starts a built app with: the image's, app variables excluded.
    const env = imageRuntimeEnv('defender');
    expect(env['NODE_OPTIONS']).toMatch(/--max-old-space-size=\d+/);
    expect(Object.keys(env).every((k) => RUNTIME_ENV_PATTERN.test(k))).toBe(true);
    expect(env['NODE_ENV']).toBeUndefined();
  });

  it('a kind without a schema', () => {
    const objects = parseManifests('apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n', 'fixture');
    expect(validateSchemas(objects, 'fixture')).toEqual(['fixture: Widget/w: no schema for example.com/v1 Widget']);
  });
});
