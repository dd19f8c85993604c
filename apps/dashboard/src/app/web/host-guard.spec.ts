import { hostName, refusal } from './host-guard';

const policy = { allowedHosts: ['fab-dashboard.example.com', '*.corp.example'] };
const get = (host: string | undefined, path = '/api/v1/cluster') => refusal({ method: 'GET', path, host, origin: undefined }, policy);

describe('dashboard host and origin guard', () => {
  it('reads the host name from a Host header', () => {
    expect(hostName('LocalHost:8083')).toBe('localhost');
    expect(hostName('[::1]:8083')).toBe('::1');
    expect(hostName('10.1.2.3')).toBe('10.1.2.3');
    expect(hostName('bad host')).toBeUndefined();
    expect(hostName(undefined)).toBeUndefined();
  });

  it('serves addresses, localhost, cluster Service names and the allowed names', () => {
    for (const h of ['127.0.0.1:8083', '10.244.1.7:8083', '[::1]:8083', 'localhost:8083', 'dashboard.defender.svc:8083', 'dashboard.defender.svc.cluster.local', 'fab-dashboard.example.com', 'a.corp.example']) {
      expect([h, get(h)]).toEqual([h, undefined]);
    }
  });

  it('refuses any other name (a rebound domain) with 421, but never health or metrics', () => {
    expect(get('attacker.example:8083')).toEqual({ status: 421, message: expect.stringContaining('DASHBOARD_ALLOWED_HOSTS') });
    expect(get('corp.example.attacker.net')?.status).toBe(421);
    expect(get(undefined)?.status).toBe(421);
    for (const path of ['/health/live', '/health/ready', '/metrics']) expect(get('attacker.example', path)).toBeUndefined();
    expect(get('attacker.example', '/health/liveness')?.status).toBe(421);
  });

  it('refuses a state-changing request from another origin; same origin or no Origin is served', () => {
    const post = (origin: string | undefined) => refusal({ method: 'POST', path: '/api/v1/local-fab/defenders', host: 'localhost:8083', origin }, policy);
    expect(post('http://attacker.example')).toEqual({ status: 403, message: expect.stringContaining('cross-origin') });
    expect(post('http://localhost:9999')?.status).toBe(403);
    expect(post('http://localhost:8083')).toBeUndefined();
    expect(post(undefined)).toBeUndefined();
    expect(refusal({ method: 'GET', path: '/api/v1/cluster', host: 'localhost:8083', origin: 'http://attacker.example' }, policy)).toBeUndefined();
  });
});
