import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWithInfra, freePort, getJson, spawnBuiltApp, testNatsEnv, waitFor, type SpawnedApp } from '@defender/infra-harness';

const OPERATOR = 'throttle-test-operator-token-0123456789';

/** One HTTP request from `localAddress` (a loopback address stands for a client). */
function send(base: string, method: string, path: string, headers: Record<string, string>, localAddress: string, body?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(base);
    const req = request({ host: u.hostname, port: u.port, method, path, headers: { host: u.host, ...headers }, localAddress }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const login = (base: string, token: string, from: string) =>
  send(base, 'POST', '/api/v1/session', { 'content-type': 'application/json' }, from, JSON.stringify({ token }));

describeWithInfra(['nats'], 'dashboard: wrong tokens are throttled per client (built bundle, real NATS)', () => {
  let dir: string;
  let app: SpawnedApp | undefined;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dashboard-throttle-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = spawnBuiltApp('dashboard', {
      ...testNatsEnv(),
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      SQLITE_PATH: join(dir, 'd.db'),
      NATS_KV_ASSIGNMENTS: `map-throttle-${process.pid}`,
      LOG_LEVEL: 'warn',
      DASHBOARD_AUTH: 'token',
      DASHBOARD_OPERATOR_TOKENS: OPERATOR,
    });
    await waitFor('the dashboard live', async () => (await getJson(`${base}/health/live`)).status === 200, 30_000);
  });

  afterAll(async () => {
    await app?.stop('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it('after 10 wrong tokens a client gets 429 with Retry-After for its wrong ones; its right token, and every other client, still sign in (issue 50)', async () => {
    const guesser = '127.0.0.3';
    for (let i = 0; i < 5; i++) expect((await login(base, `wrong-token-guess-number-${i}`, guesser)).status).toBe(401);
    for (let i = 5; i < 10; i++) {
      expect((await send(base, 'GET', '/api/v1/cluster', { authorization: `Bearer wrong-token-guess-number-${i}` }, guesser)).status).toBe(401);
    }
    const throttledLogin = await login(base, 'wrong-token-guess-number-10', guesser);
    expect([throttledLogin.status, throttledLogin.headers['set-cookie']]).toEqual([429, undefined]);
    expect(Number(throttledLogin.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(throttledLogin.body)).toMatchObject({ statusCode: 429, message: expect.stringMatching(/too many wrong dashboard tokens: try again in \d+ s/) });
    const throttledApi = await send(base, 'GET', '/api/v1/cluster', { authorization: 'Bearer wrong-token-guess-number-11' }, guesser);
    expect([throttledApi.status, Number(throttledApi.headers['retry-after']) >= 1]).toEqual([429, true]);
    // The right token from the same address (an operator behind the same NAT or proxy) is never refused.
    const operatorLogin = await login(base, OPERATOR, guesser);
    expect([operatorLogin.status, String(operatorLogin.headers['set-cookie'] ?? '').length > 0]).toEqual([200, true]);
    expect((await send(base, 'GET', '/api/v1/cluster', { authorization: `Bearer ${OPERATOR}` }, guesser)).status).toBe(200);
    // Requests without a credential are not guesses: the guesser still gets the login page and probes.
    expect((await send(base, 'GET', '/health/live', {}, guesser)).status).toBe(200);
    expect((await send(base, 'GET', '/', {}, guesser)).status).toBe(302);
    // Another client signs in and reads as usual.
    expect((await login(base, OPERATOR, '127.0.0.4')).status).toBe(200);
    expect((await send(base, 'GET', '/api/v1/cluster', { authorization: `Bearer ${OPERATOR}` }, '127.0.0.4')).status).toBe(200);
    expect(`${app?.stdout() ?? ''}${app?.stderr() ?? ''}`).toContain('wrong dashboard tokens from 127.0.0.3');
  });

  it('guessing from many addresses empties the shared budget: their wrong tokens get 429, the right token from any address (one of theirs or a new one) still passes', async () => {
    // 12 addresses x 10 wrong tokens: more than the 100 per minute all clients share.
    const guessers = Array.from({ length: 12 }, (_, i) => `127.0.1.${i + 1}`);
    const statuses = new Set<number>();
    for (const from of guessers) for (let i = 0; i < 10; i++) statuses.add((await login(base, `spread-guess-${from}-${i}`, from)).status);
    expect([...statuses].sort()).toEqual([401, 429]);
    for (const from of [guessers[0]!, guessers[11]!, '127.0.2.1']) {
      expect({ from, login: (await login(base, OPERATOR, from)).status, api: (await send(base, 'GET', '/api/v1/cluster', { authorization: `Bearer ${OPERATOR}` }, from)).status }).toEqual({ from, login: 200, api: 200 });
    }
  });
});
