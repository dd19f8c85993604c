import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';

/**
 * Who may use the dashboard (SECURITY.md). Pure: the middleware (auth.middleware.ts) feeds it the
 * request's method, path, headers and peer address, and the clock.
 *
 * - `viewer` reads everything (the page, the API, the live events); the default role of an
 *   authenticated user.
 * - `operator` also changes things: the local fab's buttons and any other request that is not
 *   GET / HEAD / OPTIONS.
 *
 * Modes (`DASHBOARD_AUTH`): `token` (bearer tokens from DASHBOARD_VIEWER_TOKENS /
 * DASHBOARD_OPERATOR_TOKENS; a browser exchanges one for a session cookie at /login), `proxy` (an
 * OIDC reverse proxy such as oauth2-proxy authenticates and passes the user and groups in headers,
 * believed only from DASHBOARD_TRUSTED_PROXIES; tokens work too when configured), `none` (everyone
 * is an operator; the configuration allows it only on a loopback address).
 */
export type Role = 'viewer' | 'operator';
export type AuthMode = 'none' | 'token' | 'proxy';

/** An authenticated caller. */
export interface Principal {
  readonly role: Role;
  /** Display name: the proxy's user, `token`, or `anonymous` (mode none). */
  readonly user: string;
  readonly via: 'none' | 'bearer' | 'session' | 'proxy';
  /** When the session ends (ms since the epoch); only for a session cookie. */
  readonly expiresAtMs?: number;
}

/** The session cookie's name. */
export const SESSION_COOKIE = 'dashboard_session';

const rank: Record<Role, number> = { viewer: 0, operator: 1 };

/** Whether `have` includes what `need` allows (an operator is also a viewer). */
export function allows(have: Role, need: Role): boolean {
  return rank[have] >= rank[need];
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

interface TokenEntry {
  readonly digest: Buffer;
  readonly role: Role;
  /** Names the token in a session cookie without revealing it (a prefix of a hash of the token). */
  readonly tag: string;
  readonly token: string;
}

/**
 * The configured bearer tokens (several per role while rotating). A presented token is compared with
 * every configured one in constant time (SHA-256 digests of equal length, `timingSafeEqual`, no early
 * exit), so neither the match nor its position leaks through timing.
 */
export class TokenTable {
  private readonly entries: readonly TokenEntry[];

  constructor(tokens: { readonly viewer: readonly string[]; readonly operator: readonly string[] }) {
    const entry = (token: string, role: Role): TokenEntry => ({ digest: sha256(token), role, tag: tokenTag(token), token });
    this.entries = [...tokens.operator.map((t) => entry(t, 'operator')), ...tokens.viewer.map((t) => entry(t, 'viewer'))];
  }

  get size(): number {
    return this.entries.length;
  }

  /** The role of `presented`, or undefined when it is no configured token. */
  roleOf(presented: string): Role | undefined {
    const d = sha256(presented);
    let found: Role | undefined;
    for (const e of this.entries) {
      // Every entry is compared; an operator token wins over a viewer one (the config forbids both).
      if (timingSafeEqual(d, e.digest) && (found === undefined || allows(e.role, found))) found = e.role;
    }
    return found;
  }

  /** The configured tokens with `tag` and `role` (a cookie names its token by tag). */
  byTag(tag: string, role: Role): readonly string[] {
    return this.entries.filter((e) => e.role === role && e.tag === tag).map((e) => e.token);
  }
}

function tokenTag(token: string): string {
  return createHash('sha256').update('dashboard-token-tag\u0000' + token, 'utf8').digest('base64url').slice(0, 12);
}

function sessionMac(token: string, payload: string): Buffer {
  return createHmac('sha256', token).update('dashboard-session\u0000' + payload, 'utf8').digest();
}

/**
 * A session cookie's value for a login with `token` (of `role`), valid until `expiresAtMs`:
 * `v1.<role>.<expires, s>.<token tag>.<HMAC-SHA256 keyed with the token>`. Stateless, so every replica
 * accepts it; signed with the token itself, so removing a token from the configuration ends its
 * sessions at once, and nothing but the tokens needs to be shared between replicas.
 */
export function signSession(token: string, role: Role, expiresAtMs: number): string {
  const payload = `v1.${role}.${Math.floor(expiresAtMs / 1000)}.${tokenTag(token)}`;
  return `${payload}.${sessionMac(token, payload).toString('base64url')}`;
}

/**
 * The principal of a session cookie value, or undefined when it is malformed, expired, forged, or
 * signed with a token no longer configured (for its role).
 */
export function verifySession(value: string, tokens: TokenTable, nowMs: number): Principal | undefined {
  const m = /^v1\.(viewer|operator)\.(\d{1,12})\.([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!m) return undefined;
  const [, role, exp, tag, mac] = m as unknown as [string, Role, string, string, string];
  const expiresAtMs = Number(exp) * 1000;
  if (!(expiresAtMs > nowMs)) return undefined;
  const payload = `v1.${role}.${exp}.${tag}`;
  const given = Buffer.from(mac, 'base64url');
  let ok = false;
  for (const token of tokens.byTag(tag, role)) {
    const want = sessionMac(token, payload);
    if (given.length === want.length && timingSafeEqual(given, want)) ok = true;
  }
  return ok ? { role, user: 'token', via: 'session', expiresAtMs } : undefined;
}

/** The `Set-Cookie` value of a session (HttpOnly, SameSite=Strict, Path=/; Secure when asked). */
export function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** The `Set-Cookie` value that ends a session in the browser. */
export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', 0, secure);
}

/** The value of cookie `name` in a `Cookie` header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** The token of an `Authorization: Bearer <token>` header; undefined without one. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/** An address or CIDR block (`10.0.0.0/8`, `fd00::/8`, `10.1.2.3`), or undefined when it is neither. */
export function parseAddressOrBlock(entry: string): { address: string; prefix: number | undefined; family: 'ipv4' | 'ipv6' } | undefined {
  const [address = '', prefix, ...rest] = entry.trim().split('/');
  const v = isIP(address);
  if (v === 0 || rest.length > 0) return undefined;
  const family = v === 4 ? 'ipv4' : 'ipv6';
  if (prefix === undefined) return { address, prefix: undefined, family };
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > (v === 4 ? 32 : 128)) return undefined;
  return { address, prefix: Number(prefix), family };
}

/** The reverse proxies whose identity headers are believed: by the TCP peer address, never by a header. */
export class TrustedProxies {
  private readonly list = new BlockList();

  /** @throws Error when an entry is not an address or CIDR block (the config validates them first). */
  constructor(entries: readonly string[]) {
    for (const e of entries) {
      const p = parseAddressOrBlock(e);
      if (!p) throw new Error(`not an address or CIDR block: ${e}`);
      if (p.prefix === undefined) this.list.addAddress(p.address, p.family);
      else this.list.addSubnet(p.address, p.prefix, p.family);
    }
  }

  /** Whether the peer `address` (as the socket reports it; IPv4-mapped IPv6 counts as IPv4) is trusted. */
  trusts(address: string | undefined): boolean {
    if (!address) return false;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    const a = mapped?.[1] ?? address;
    const v = isIP(a);
    if (v === 0) return false;
    return this.list.check(a, v === 4 ? 'ipv4' : 'ipv6');
  }
}

/** What the proxy mode reads and how groups map to roles. */
export interface ProxyPolicy {
  readonly trusted: TrustedProxies;
  /** Lower-case header names. */
  readonly userHeader: string;
  readonly groupsHeader: string;
  /** Groups granting operator. */
  readonly operatorGroups: readonly string[];
  /** Groups granting viewer; empty: every authenticated user is a viewer. */
  readonly viewerGroups: readonly string[];
}

/** The role of a proxy user in `groups`, or undefined when none is granted. */
export function roleOfGroups(groups: readonly string[], policy: Pick<ProxyPolicy, 'operatorGroups' | 'viewerGroups'>): Role | undefined {
  if (groups.some((g) => policy.operatorGroups.includes(g))) return 'operator';
  if (policy.viewerGroups.length === 0 || groups.some((g) => policy.viewerGroups.includes(g))) return 'viewer';
  return undefined;
}

/** Everything the dashboard's authentication is configured with. */
export interface AuthPolicy {
  readonly mode: AuthMode;
  readonly tokens: TokenTable;
  readonly proxy?: ProxyPolicy;
}

/** The parts of a request authentication looks at. */
export interface AuthRequest {
  readonly method: string;
  /** Path with query. */
  readonly path: string;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The TCP peer address. */
  readonly peer: string | undefined;
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/**
 * Who sends `req`: a bearer token (a wrong one is never retried with another credential), a trusted
 * proxy's user, or a session cookie. `denied`: authenticated by the proxy, but in no group that grants
 * a role.
 */
export function authenticate(req: AuthRequest, policy: AuthPolicy, nowMs: number): Principal | 'denied' | undefined {
  if (policy.mode === 'none') return { role: 'operator', user: 'anonymous', via: 'none' };
  const auth = one(req.headers['authorization']);
  if (auth !== undefined) {
    const token = bearerToken(auth);
    const role = token === undefined ? undefined : policy.tokens.roleOf(token);
    return role ? { role, user: 'token', via: 'bearer' } : undefined;
  }
  if (policy.mode === 'proxy' && policy.proxy && policy.proxy.trusted.trusts(req.peer)) {
    const user = one(req.headers[policy.proxy.userHeader])?.trim();
    if (user) {
      const groups = (one(req.headers[policy.proxy.groupsHeader]) ?? '')
        .split(',')
        .map((g) => g.trim())
        .filter((g) => g.length > 0);
      const role = roleOfGroups(groups, policy.proxy);
      return role ? { role, user, via: 'proxy' } : 'denied';
    }
  }
  const cookie = cookieValue(one(req.headers['cookie']), SESSION_COOKIE);
  return cookie ? verifySession(cookie, policy.tokens, nowMs) : undefined;
}

/** Paths anyone may fetch: probes, metrics, the login page, the page's static files, the session endpoint. */
const OPEN = /^\/(health\/(live|ready)|metrics|login|assets\/[^/?]*|api\/v1\/session)(\?|$)/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether anyone may fetch `path` without signing in (probes, metrics, the login page, static files, the session endpoint). */
export function isOpenPath(path: string): boolean {
  return OPEN.test(path);
}

/** What the middleware does with a request. */
export type AuthDecision =
  | { readonly kind: 'pass'; readonly principal: Principal | undefined }
  | { readonly kind: 'unauthenticated'; readonly status: 401; readonly message: string }
  | { readonly kind: 'login'; readonly location: '/login' }
  | { readonly kind: 'forbidden'; readonly status: 403; readonly message: string };

/** The role a request needs: operator for anything that may change something. */
export function neededRole(method: string): Role {
  return SAFE_METHODS.has(method.toUpperCase()) ? 'viewer' : 'operator';
}

/**
 * The decision for `req`: open paths pass (with the principal when there is one, for the session
 * endpoint); otherwise an unauthenticated API call gets 401, a page load the login page, and a viewer
 * asking for an operator's action 403.
 */
export function decide(req: AuthRequest, policy: AuthPolicy, nowMs: number): AuthDecision {
  const who = authenticate(req, policy, nowMs);
  const principal = who === 'denied' ? undefined : who;
  if (OPEN.test(req.path)) return { kind: 'pass', principal };
  if (who === 'denied') return { kind: 'forbidden', status: 403, message: 'your groups grant no dashboard role (DASHBOARD_VIEWER_GROUPS / DASHBOARD_OPERATOR_GROUPS)' };
  if (!principal) {
    const api = req.path.startsWith('/api/');
    if (!api && SAFE_METHODS.has(req.method.toUpperCase())) return { kind: 'login', location: '/login' };
    return { kind: 'unauthenticated', status: 401, message: policy.mode === 'proxy' ? 'not authenticated: sign in through the dashboard\'s proxy, or send Authorization: Bearer <token>' : 'not authenticated: send Authorization: Bearer <token>, or sign in at /login' };
  }
  const need = neededRole(req.method);
  if (!allows(principal.role, need)) return { kind: 'forbidden', status: 403, message: `${need} role required (you are a ${principal.role})` };
  return { kind: 'pass', principal };
}
