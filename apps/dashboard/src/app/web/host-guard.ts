import { isIP } from 'node:net';

/**
 * DNS-rebinding and cross-site protection of the dashboard. A page on an attacker's domain can make a
 * browser send requests to the dashboard by re-pointing that domain at the dashboard's address; the
 * request then carries the attacker's name in `Host`. So a request is served only when its `Host` is
 * an address (an IP literal: no name to rebind), `localhost`, a cluster-internal Service name
 * (`*.svc`, `*.svc.cluster.local`, which public DNS cannot serve) or one of the names the operator
 * allows (`DASHBOARD_ALLOWED_HOSTS`, e.g. the Ingress host). A request that changes something (not
 * GET / HEAD) must also come from the dashboard's own origin when the browser says where it comes from
 * (`Origin`). Health and metrics answer whatever the `Host` (kubelet probes and Prometheus use the pod IP).
 */
export interface HostPolicy {
  /** Extra host names allowed (lower case, no port); `*.example.com` allows the subdomains. */
  readonly allowedHosts: readonly string[];
}

const ALWAYS_OPEN = /^\/(health\/(live|ready)|metrics)(\/|\?|$)/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The host name of a `Host` header (lower case, without port or IPv6 brackets), or undefined when malformed. */
export function hostName(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const h = header.trim().toLowerCase();
  const v6 = /^\[([0-9a-f:.]+)\](:\d+)?$/.exec(h);
  if (v6) return v6[1];
  const m = /^([a-z0-9.-]+)(:\d+)?$/.exec(h);
  return m ? m[1] : undefined;
}

function allowedName(name: string, policy: HostPolicy): boolean {
  if (isIP(name) !== 0 || name === 'localhost') return true;
  if (name.endsWith('.svc') || name.endsWith('.svc.cluster.local')) return true;
  return policy.allowedHosts.some((a) => (a.startsWith('*.') ? name.endsWith(a.slice(1)) : name === a));
}

/** Why a request must be refused (status and message), or undefined when it may be served. */
export function refusal(
  req: { readonly method: string; readonly path: string; readonly host: string | undefined; readonly origin: string | undefined },
  policy: HostPolicy,
): { status: 403 | 421; message: string } | undefined {
  if (ALWAYS_OPEN.test(req.path)) return undefined;
  const name = hostName(req.host);
  if (name === undefined || !allowedName(name, policy)) {
    return { status: 421, message: `host ${JSON.stringify(req.host ?? '')} is not served here (set DASHBOARD_ALLOWED_HOSTS to the name you use)` };
  }
  if (!SAFE_METHODS.has(req.method.toUpperCase()) && req.origin !== undefined && req.origin !== 'null') {
    let originHost: string | undefined;
    try {
      originHost = new URL(req.origin).host.toLowerCase();
    } catch {
      originHost = undefined;
    }
    if (originHost !== req.host?.trim().toLowerCase()) return { status: 403, message: `cross-origin request from ${req.origin} refused` };
  }
  return undefined;
}
