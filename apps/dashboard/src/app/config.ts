import { z } from 'zod';
import { isIP } from 'node:net';
import { clusterEnvShape, commonEnvShape, env, storeEnvShape } from '@defender/nest-common';
import { parseAddressOrBlock } from './auth/auth';

const httpUrl = z.string().url('must be an http(s) URL').refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL');

/** Comma-separated http(s) URLs (empty: none). */
const urlList = () =>
  z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim().replace(/\/+$/, ''))
        .filter((s) => s.length > 0),
    )
    .pipe(z.array(httpUrl).max(20, 'at most 20 URLs'));

/** A comma-separated list (empty: none), each entry trimmed and checked by `item`. */
const list = (item: z.ZodString, max: number) =>
  z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0),
    )
    .pipe(z.array(item).max(max, `at most ${max} entries`));

/** Bearer tokens: comma-separated (several while rotating), each at least 16 characters. */
const tokenList = () => list(z.string().min(16, 'each token must be at least 16 characters').regex(/^[\x21-\x7e]+$/, 'tokens are printable ASCII without spaces'), 20);

/** A header name (lower-cased). */
const headerName = (def: string) =>
  z
    .string()
    .default(def)
    .transform((v) => v.toLowerCase())
    .pipe(z.string().regex(/^[a-z0-9-]+$/, 'must be an HTTP header name'));

/** Whether HTTP_HOST is a loopback address (only then may the dashboard run without authentication). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/** The dashboard's environment (see apps/dashboard/README.md). */
export const dashboardEnvSchema = z
  .object({
    ...commonEnvShape(8083),
    ...clusterEnvShape(),
    ...storeEnvShape(),
    POD_NAME: env.optionalString(),
    /** Election bucket and name of the controllers (who leads). */
    ELECTION_KV_BUCKET: env.natsName('elections'),
    ELECTION_NAME: env.natsName('assignment-controller'),
    /** Controller replicas' HTTP base URLs: their /api/v1/status gives the trigger state. Empty: the map only. */
    CONTROLLER_URLS: urlList(),
    /** The alarm and hold stream (`defense.alarms.>`, `defense.holds.>`). */
    DEFENSE_EVENTS_STREAM: env.natsName('defense-events'),
    /** Alarms and holds kept for the feed. */
    ALARM_FEED_SIZE: env.int(300, 10, 10_000),
    /** How often the cluster view is refreshed and pushed to browsers. */
    REFRESH_SECONDS: env.seconds(1, 0.2, 60),
    /** Runs shown per U-chart. */
    CHART_RUNS: env.int(100, 10, 1000),
    /**
     * Host names the dashboard answers to besides addresses, `localhost` and cluster Service names
     * (comma-separated; `*.example.com` for subdomains), e.g. its Ingress host: any other `Host` is refused
     * (DNS rebinding; web/host-guard.ts).
     */
    DASHBOARD_ALLOWED_HOSTS: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter((s) => s.length > 0),
      )
      .pipe(z.array(z.string().regex(/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/, 'each entry must be a host name or *.domain')).max(50, 'at most 50 names')),
    /** Local fab only: its control endpoint (crash / add defender, restart leader) and token. */
    LOCAL_FAB_CONTROL_URL: httpUrl.optional(),
    LOCAL_FAB_CONTROL_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    /**
     * Who may use the dashboard: `token` (bearer tokens; browsers sign in at /login with one), `proxy`
     * (an OIDC reverse proxy passes user and groups in headers) or `none` (everyone is an operator:
     * allowed only when HTTP_HOST is a loopback address). See auth/auth.ts.
     */
    DASHBOARD_AUTH: z.enum(['none', 'token', 'proxy'], { message: 'must be token, proxy or none' }).default('none'),
    /** Read-only bearer tokens, comma-separated (several while rotating), each at least 16 characters. */
    DASHBOARD_VIEWER_TOKENS: tokenList(),
    /** Operator bearer tokens (the local fab's buttons, any state-changing request), comma-separated. */
    DASHBOARD_OPERATOR_TOKENS: tokenList(),
    /** How long a browser session (the cookie /login sets) lasts. */
    DASHBOARD_SESSION_SECONDS: env.int(28_800, 60, 604_800),
    /** Mark the session cookie Secure (set when browsers reach the dashboard over HTTPS, e.g. through a TLS Ingress). */
    DASHBOARD_COOKIE_SECURE: env.bool(false),
    /** Proxy mode: addresses or CIDR blocks of the reverse proxies whose identity headers are believed (by TCP peer address). */
    DASHBOARD_TRUSTED_PROXIES: list(z.string().refine((e) => parseAddressOrBlock(e) !== undefined, 'each entry must be an IP address or CIDR block'), 50),
    /** Proxy mode: the header with the user's name (oauth2-proxy: X-Forwarded-User; nginx auth_request: X-Auth-Request-User). */
    DASHBOARD_PROXY_USER_HEADER: headerName('x-forwarded-user'),
    /** Proxy mode: the header with the user's groups, comma-separated. */
    DASHBOARD_PROXY_GROUPS_HEADER: headerName('x-forwarded-groups'),
    /** Proxy mode: groups granting the operator role. */
    DASHBOARD_OPERATOR_GROUPS: list(z.string(), 50),
    /** Proxy mode: groups granting the viewer role; empty: every user the proxy authenticates is a viewer. */
    DASHBOARD_VIEWER_GROUPS: list(z.string(), 50),
  })
  .superRefine(
    (c, ctx) => {
      if ((c.LOCAL_FAB_CONTROL_URL === undefined) !== (c.LOCAL_FAB_CONTROL_TOKEN === undefined)) {
        ctx.addIssue({ code: 'custom', path: ['LOCAL_FAB_CONTROL_URL'], message: 'LOCAL_FAB_CONTROL_URL and LOCAL_FAB_CONTROL_TOKEN go together' });
      }
      authProblems(c).forEach((p) => ctx.addIssue({ code: 'custom', ...p }));
    },
    { when: () => true },
  );

export type DashboardConfig = z.infer<typeof dashboardEnvSchema>;

/**
 * Fail closed: no authentication only on a loopback address; a mode without what it needs, or
 * settings of a mode that is not on (a forgotten DASHBOARD_AUTH would otherwise serve everyone), are
 * problems. Paths name the variable to fix; an unset DASHBOARD_AUTH is reported as required plus an
 * explanation (the config loader shows "is required" for a variable left unset).
 */
function authProblems(c: Readonly<Record<string, unknown>>): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  const mode = c['DASHBOARD_AUTH'];
  const host = typeof c['HTTP_HOST'] === 'string' ? c['HTTP_HOST'] : '0.0.0.0';
  // With other problems present this runs on partly parsed values: only lists count.
  const arr = (v: unknown): readonly string[] => (Array.isArray(v) ? (v as string[]) : []);
  const viewer = arr(c['DASHBOARD_VIEWER_TOKENS']);
  const operator = arr(c['DASHBOARD_OPERATOR_TOKENS']);
  const proxies = arr(c['DASHBOARD_TRUSTED_PROXIES']);
  const proxySettings = [...proxies, ...arr(c['DASHBOARD_OPERATOR_GROUPS']), ...arr(c['DASHBOARD_VIEWER_GROUPS'])];
  if (mode === 'none' && !isLoopback(host)) {
    const how = 'set DASHBOARD_AUTH=token (with DASHBOARD_OPERATOR_TOKENS / DASHBOARD_VIEWER_TOKENS) or DASHBOARD_AUTH=proxy (with DASHBOARD_TRUSTED_PROXIES)';
    problems.push({ path: ['DASHBOARD_AUTH'], message: `none (no authentication) is allowed only on a loopback HTTP_HOST (127.0.0.1, ::1, localhost), and HTTP_HOST is ${host}: ${how}` });
    problems.push({ path: [], message: `the dashboard binds HTTP_HOST=${host}, not a loopback address, without authentication: ${how}, or bind HTTP_HOST=127.0.0.1` });
  }
  if (mode === 'none' && viewer.length + operator.length + proxySettings.length > 0) {
    problems.push({ path: ['DASHBOARD_AUTH'], message: 'is none, but tokens or proxy settings are set: set DASHBOARD_AUTH=token or proxy (or remove them)' });
  }
  if (mode === 'token' && viewer.length + operator.length === 0) {
    problems.push({ path: ['DASHBOARD_AUTH'], message: 'token needs DASHBOARD_OPERATOR_TOKENS and/or DASHBOARD_VIEWER_TOKENS' });
  }
  if (mode === 'token' && proxySettings.length > 0) {
    problems.push({ path: ['DASHBOARD_AUTH'], message: 'is token, but DASHBOARD_TRUSTED_PROXIES / DASHBOARD_*_GROUPS are set: they need DASHBOARD_AUTH=proxy' });
  }
  if (mode === 'proxy' && proxies.length === 0) {
    problems.push({ path: ['DASHBOARD_AUTH'], message: 'proxy needs DASHBOARD_TRUSTED_PROXIES (the addresses identity headers are believed from)' });
  }
  if (operator.some((t) => viewer.includes(t))) {
    problems.push({ path: ['DASHBOARD_OPERATOR_TOKENS'], message: 'a token is both a viewer and an operator token: give each token one role' });
  }
  return problems;
}
