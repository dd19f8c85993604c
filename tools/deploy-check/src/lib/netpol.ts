import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { INetworkPolicyPeer } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPeer';
import type { INetworkPolicyPort } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPort';
import { K8sObject } from './kustomize';

type ILabelSelector = NonNullable<INetworkPolicyPeer['podSelector']>;

/**
 * A small evaluator of Kubernetes NetworkPolicy semantics (networking.k8s.io/v1), enough to ask
 * "may this pod open this connection?" of a render: policies are additive allow-lists; a pod that no
 * policy selects for a direction is open in that direction; a connection needs the source's egress
 * and the destination's ingress.
 */

/** One end of a connection: a pod (with labels) in a namespace, or an address outside the cluster. */
export type Endpoint =
  | { kind: 'pod'; namespace: string; namespaceLabels: Record<string, string>; labels: Record<string, string>; ports?: readonly { name?: string; port: number; protocol?: string }[] }
  | { kind: 'external'; ip: string };

type Policy = INetworkPolicy & K8sObject;

export function matchSelector(sel: ILabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!sel) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const v = labels[e.key];
    const has = v !== undefined;
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(v))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(v)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

function ipv4(ip: string): number {
  return ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
}

function inCidr(ip: string, cidr: string): boolean {
  const [net = '', bits = '32'] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(ipv4(net) / size) * size;
  return ipv4(ip) >= start && ipv4(ip) < start + size;
}

function peerMatches(peer: INetworkPolicyPeer, policyNs: string, ep: Endpoint): boolean {
  if (peer.ipBlock) {
    if (ep.kind !== 'external') return false;
    return inCidr(ep.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((c) => inCidr(ep.ip, c));
  }
  if (ep.kind !== 'pod') return false;
  if (peer.namespaceSelector) {
    if (!matchSelector(peer.namespaceSelector, ep.namespaceLabels)) return false;
  } else if (ep.namespace !== policyNs) {
    return false;
  }
  return matchSelector(peer.podSelector, ep.labels);
}

function portMatches(ports: INetworkPolicyPort[] | undefined, port: number, protocol: string, dst: Endpoint): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => {
    if ((p.protocol ?? 'TCP') !== protocol) return false;
    if (p.port === undefined) return true;
    if (typeof p.port === 'number') return port >= p.port && port <= (p.endPort ?? p.port);
    // A named port means the destination pod's container port of that name.
    return dst.kind === 'pod' && (dst.ports ?? []).some((cp) => cp.name === p.port && cp.port === port && (cp.protocol ?? 'TCP') === protocol);
  });
}

function types(p: Policy): string[] {
  return p.spec?.policyTypes ?? (p.spec?.egress ? ['Ingress', 'Egress'] : ['Ingress']);
}

/** Whether `src` may open a connection to `dst` on `port`/`protocol` under the render's policies. */
export function allowed(objects: readonly K8sObject[], src: Endpoint, dst: Endpoint, port: number, protocol = 'TCP'): boolean {
  const policies = objects.filter((o): o is Policy => o.kind === 'NetworkPolicy');
  const ns = (p: Policy) => p.metadata.namespace ?? 'default';
  if (src.kind === 'pod') {
    const egress = policies.filter((p) => ns(p) === src.namespace && matchSelector(p.spec?.podSelector, src.labels) && types(p).includes('Egress'));
    if (egress.length > 0) {
      const ok = egress.some((p) =>
        (p.spec?.egress ?? []).some((r) => (!r.to || r.to.length === 0 || r.to.some((peer) => peerMatches(peer, ns(p), dst))) && portMatches(r.ports, port, protocol, dst)),
      );
      if (!ok) return false;
    }
  }
  if (dst.kind === 'pod') {
    const ingress = policies.filter((p) => ns(p) === dst.namespace && matchSelector(p.spec?.podSelector, dst.labels) && types(p).includes('Ingress'));
    if (ingress.length > 0) {
      return ingress.some((p) =>
        (p.spec?.ingress ?? []).some((r) => (!r.from || r.from.length === 0 || r.from.some((peer) => peerMatches(peer, ns(p), src))) && portMatches(r.ports, port, protocol, dst)),
      );
    }
  }
  return true;
}
