import {
  authenticate,
  AuthPolicy,
  AuthRequest,
  bearerToken,
  cookieValue,
  decide,
  roleOfGroups,
  SESSION_COOKIE,
  sessionCookie,
  signSession,
  TokenTable,
  TrustedProxies,
  verifySession,
} from './auth';

const VIEWER = 'viewer-token-0123456789abcdef';
const OPERATOR = 'operator-token-0123456789abcdef';
const OPERATOR_NEW = 'operator-token-rotated-0123456789';
const tokens = new TokenTable({ viewer: [VIEWER], operator: [OPERATOR, OPERATOR_NEW] });
const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const HOUR = 3_600_000;

const tokenPolicy: AuthPolicy = { mode: 'token', tokens };
const proxyPolicy: AuthPolicy = {
  mode: 'proxy',
  tokens: new TokenTable({ viewer: [], operator: [] }),
  proxy: { trusted: new TrustedProxies(['10.0.0.0/8', '192.168.1.5', 'fd00::/8']), userHeader: 'x-forwarded-user', groupsHeader: 'x-forwarded-groups', operatorGroups: ['fab-operators'], viewerGroups: [] },
};

const req = (over: Partial<AuthRequest> & { headers?: AuthRequest['headers'] } = {}): AuthRequest => ({ method: 'GET', path: '/api/v1/cluster', headers: {}, peer: '127.0.0.1', ...over });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const cookie = (v: string) => ({ cookie: `other=1; ${SESSION_COOKIE}=${v}; x=y` });

describe('bearer tokens', () => {
  it('give each configured token its role, several per role while rotating, and nothing else', () => {
    expect(tokens.roleOf(VIEWER)).toBe('viewer');
    expect(tokens.roleOf(OPERATOR)).toBe('operator');
    expect(tokens.roleOf(OPERATOR_NEW)).toBe('operator');
    for (const wrong of ['', VIEWER.slice(0, -1), VIEWER + 'x', OPERATOR.toUpperCase(), ' ' + VIEWER]) expect([wrong, tokens.roleOf(wrong)]).toEqual([wrong, undefined]);
  });

  it('read the Authorization header only in the Bearer form', () => {
    expect(bearerToken(`Bearer ${VIEWER}`)).toBe(VIEWER);
    expect(bearerToken(`bearer  ${VIEWER} `)).toBe(VIEWER);
    expect(bearerToken(`Basic ${VIEWER}`)).toBeUndefined();
    expect(bearerToken(`Bearer a b`)).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});

describe('session cookies', () => {
  it('verify until they expire, with the role of the token that signed them', () => {
    const v = signSession(OPERATOR, 'operator', NOW + HOUR);
    expect(verifySession(v, tokens, NOW)).toEqual({ role: 'operator', user: 'token', via: 'session', expiresAtMs: Math.floor((NOW + HOUR) / 1000) * 1000 });
    expect(verifySession(v, tokens, NOW + HOUR - 1000)).toMatchObject({ role: 'operator' });
    expect(verifySession(v, tokens, NOW + HOUR)).toBeUndefined();
    expect(verifySession(signSession(VIEWER, 'viewer', NOW + HOUR), tokens, NOW)).toMatchObject({ role: 'viewer' });
  });

  it('refuse a forged, tampered or promoted cookie', () => {
    const v = signSession(VIEWER, 'viewer', NOW + HOUR);
    const [ver, , exp, tag, mac] = v.split('.');
    expect(verifySession([ver, 'operator', exp, tag, mac].join('.'), tokens, NOW)).toBeUndefined();
    expect(verifySession([ver, 'viewer', String(Number(exp) + 3600), tag, mac].join('.'), tokens, NOW)).toBeUndefined();
    const flipped = mac!.slice(0, -2) + (mac!.at(-2) === 'A' ? 'B' : 'A') + mac!.at(-1);
    expect(verifySession([ver, 'viewer', exp, tag, flipped].join('.'), tokens, NOW)).toBeUndefined();
    // Signed with a token that is not configured (an attacker's guess): refused.
    expect(verifySession(signSession('not-a-configured-token-0123', 'operator', NOW + HOUR), tokens, NOW)).toBeUndefined();
    for (const junk of ['', 'v1', `${v}.x`, v.replace('v1.', 'v2.'), 'v1.viewer.1.abc.def']) expect(verifySession(junk, tokens, NOW)).toBeUndefined();
  });

  it('end when their token is removed from the configuration (rotation revokes)', () => {
    const v = signSession(OPERATOR, 'operator', NOW + HOUR);
    expect(verifySession(v, new TokenTable({ viewer: [VIEWER], operator: [OPERATOR_NEW] }), NOW)).toBeUndefined();
    // Moved to the viewer list: its operator sessions end too.
    expect(verifySession(v, new TokenTable({ viewer: [OPERATOR], operator: [] }), NOW)).toBeUndefined();
  });

  it('are HttpOnly, SameSite=Strict cookies for the whole site, Secure when asked', () => {
    expect(sessionCookie('abc', 3600, false)).toBe(`${SESSION_COOKIE}=abc; Path=/; Max-Age=3600; HttpOnly; SameSite=Strict`);
    expect(sessionCookie('abc', 3600, true)).toMatch(/; Secure$/);
    expect(cookieValue(`a=1; ${SESSION_COOKIE}=v1.x ; b=2`, SESSION_COOKIE)).toBe('v1.x');
    expect(cookieValue('a=1', SESSION_COOKIE)).toBeUndefined();
  });
});

describe('reverse-proxy mode', () => {
  it('trusts addresses and CIDR blocks by the peer address, IPv4-mapped IPv6 included', () => {
    const t = new TrustedProxies(['10.0.0.0/8', '192.168.1.5', 'fd00::/8']);
    for (const a of ['10.1.2.3', '::ffff:10.9.9.9', '192.168.1.5', 'fd00::1']) expect([a, t.trusts(a)]).toEqual([a, true]);
    for (const a of ['11.0.0.1', '192.168.1.6', '127.0.0.1', '::1', 'fe80::1', undefined, 'junk']) expect([a, t.trusts(a)]).toEqual([a, false]);
    expect(() => new TrustedProxies(['10.0.0.0/33'])).toThrow(/not an address/);
  });

  it('maps groups to roles: operator groups, then viewer groups (none configured: every user is a viewer)', () => {
    const open = { operatorGroups: ['ops'], viewerGroups: [] };
    expect(roleOfGroups(['eng', 'ops'], open)).toBe('operator');
    expect(roleOfGroups(['eng'], open)).toBe('viewer');
    expect(roleOfGroups([], open)).toBe('viewer');
    const closed = { operatorGroups: ['ops'], viewerGroups: ['fab'] };
    expect(roleOfGroups(['fab'], closed)).toBe('viewer');
    expect(roleOfGroups(['eng'], closed)).toBeUndefined();
  });

  it('believes the identity headers only from a trusted proxy', () => {
    const headers = { 'x-forwarded-user': 'alice@fab', 'x-forwarded-groups': 'eng, fab-operators' };
    expect(authenticate(req({ headers, peer: '10.4.0.7' }), proxyPolicy, NOW)).toEqual({ role: 'operator', user: 'alice@fab', via: 'proxy' });
    expect(authenticate(req({ headers: { 'x-forwarded-user': 'bob' }, peer: '::ffff:10.4.0.7' }), proxyPolicy, NOW)).toEqual({ role: 'viewer', user: 'bob', via: 'proxy' });
    expect(authenticate(req({ headers, peer: '172.16.0.9' }), proxyPolicy, NOW)).toBeUndefined();
    expect(authenticate(req({ headers: { 'x-forwarded-groups': 'fab-operators' }, peer: '10.4.0.7' }), proxyPolicy, NOW)).toBeUndefined();
    expect(decide(req({ headers, peer: '172.16.0.9' }), proxyPolicy, NOW)).toMatchObject({ kind: 'unauthenticated', status: 401 });
  });

  it('refuses (403) a proxy user whose groups grant no role', () => {
    const policy: AuthPolicy = { ...proxyPolicy, proxy: { ...proxyPolicy.proxy!, viewerGroups: ['fab'] } };
    expect(decide(req({ headers: { 'x-forwarded-user': 'eve', 'x-forwarded-groups': 'eng' }, peer: '10.0.0.1' }), policy, NOW)).toMatchObject({ kind: 'forbidden', status: 403 });
  });
});

describe('decisions', () => {
  const state = (r: Partial<AuthRequest>, policy = tokenPolicy) => {
    const d = decide(req(r), policy, NOW);
    return d.kind === 'pass' ? `pass:${d.principal?.role ?? '-'}` : d.kind === 'login' ? 'login' : `${d.kind}:${d.status}`;
  };

  it('without credentials: 401 for the API, the login page for the page, open probes, metrics, login and assets', () => {
    expect(state({})).toBe('unauthenticated:401');
    expect(state({ path: '/api/v1/events' })).toBe('unauthenticated:401');
    expect(state({ path: '/api/docs' })).toBe('unauthenticated:401');
    expect(state({ method: 'POST', path: '/api/v1/local-fab/defenders' })).toBe('unauthenticated:401');
    expect(state({ path: '/' })).toBe('login');
    for (const path of ['/health/live', '/health/ready', '/metrics', '/login', '/assets/login.js', '/api/v1/session']) expect([path, state({ path })]).toEqual([path, 'pass:-']);
    expect(state({ method: 'POST', path: '/api/v1/session' })).toBe('pass:-');
  });

  it('a viewer reads, and gets 403 on anything that changes state; an operator does both', () => {
    expect(state({ headers: bearer(VIEWER) })).toBe('pass:viewer');
    expect(state({ method: 'POST', path: '/api/v1/local-fab/defenders/crash', headers: bearer(VIEWER) })).toBe('forbidden:403');
    expect(state({ method: 'DELETE', path: '/api/v1/anything', headers: bearer(VIEWER) })).toBe('forbidden:403');
    expect(state({ method: 'POST', path: '/api/v1/local-fab/defenders/crash', headers: bearer(OPERATOR) })).toBe('pass:operator');
    expect(state({ path: '/', headers: cookie(signSession(VIEWER, 'viewer', NOW + HOUR)) })).toBe('pass:viewer');
    expect(state({ method: 'POST', path: '/api/v1/local-fab/defenders', headers: cookie(signSession(OPERATOR, 'operator', NOW + HOUR)) })).toBe('pass:operator');
  });

  it('a wrong bearer token is refused even beside a valid session cookie; an expired session is no session', () => {
    expect(state({ headers: { ...bearer('wrong-token-0123456789abc'), ...cookie(signSession(OPERATOR, 'operator', NOW + HOUR)) } })).toBe('unauthenticated:401');
    expect(state({ headers: cookie(signSession(OPERATOR, 'operator', NOW - 1000)) })).toBe('unauthenticated:401');
    expect(state({ path: '/', headers: cookie(signSession(OPERATOR, 'operator', NOW - 1000)) })).toBe('login');
  });

  it('mode none: everyone is an operator', () => {
    expect(state({ method: 'POST', path: '/api/v1/local-fab/defenders' }, { mode: 'none', tokens })).toBe('pass:operator');
  });
});
