import { ControlServer, type FabControl } from './control-server';
import { NotFoundError } from './local-fab';
import type { ManagedProcess } from './processes';

/** The control endpoint's routes, auth and error mapping, over a stand-in fab. */
describe('ControlServer', () => {
  const calls: string[] = [];
  const proc = (name: string) => ({ name, exit: { code: 0, signal: null, at: new Date(0) } }) as unknown as ManagedProcess;
  const fab: FabControl = {
    processes: async () => [],
    describe: () => ({ natsUrl: 'nats://x' }),
    addDefender: async () => (calls.push('add'), proc('defender-pod-9')),
    crashDefender: async (ref: string) => {
      calls.push(`crash ${ref}`);
      if (ref === 'defender-7') throw new NotFoundError('no running defender "defender-7"');
      return proc('defender-pod-1');
    },
    drainDefender: async (ref: string) => (calls.push(`drain ${ref}`), proc('defender-pod-1')),
    restartLeader: async (mode: 'kill' | 'graceful' = 'kill') => (calls.push(`restart ${mode}`), { stopped: 'controller-0', started: 'controller-1' }),
  };
  let server: ControlServer;
  const token = 'a-token-of-some-length';
  const call = (method: string, path: string, body?: unknown, auth = `Bearer ${token}`) =>
    fetch(`${server.url}${path}`, { method, headers: { authorization: auth, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

  beforeAll(async () => {
    server = await ControlServer.start(fab, token);
  });
  afterAll(() => server.close());

  it('listens on 127.0.0.1 only and wants the bearer token', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await call('GET', '/control/processes', undefined, 'Bearer wrong-token-of-some-len')).status).toBe(401);
    expect((await call('GET', '/control/processes', undefined, '')).status).toBe(401);
  });

  it.each([
    ['POST', '/control/defenders', undefined, 201, { started: 'defender-pod-9' }, 'add'],
    ['POST', '/control/defenders/crash', { defender: 'defender-1' }, 200, { crashed: 'defender-pod-1', defender: 'defender-1' }, 'crash defender-1'],
    ['POST', '/control/defenders/drain', { defender: 'defender-1' }, 200, { drained: 'defender-pod-1' }, 'drain defender-1'],
    ['POST', '/control/controller/restart-leader', { mode: 'graceful' }, 200, { stopped: 'controller-0', started: 'controller-1' }, 'restart graceful'],
    ['POST', '/control/controller/restart-leader', {}, 200, { started: 'controller-1' }, 'restart kill'],
    ['GET', '/control/fab', undefined, 200, { natsUrl: 'nats://x' }, null],
  ] as const)('%s %s', async (method, path, body, status, want, call0) => {
    calls.length = 0;
    const res = await call(method, path, body);
    expect(res.status).toBe(status);
    expect(await res.json()).toMatchObject(want);
    expect(calls).toEqual(call0 ? [call0] : []);
  });

  it.each([
    ['/control/defenders/crash', { defender: 'defender-7' }, 404, /no running defender/],
    ['/control/defenders/crash', { defender: '../../etc' }, 400, /must name a defender/],
    ['/control/defenders/crash', 'not an object', 400, /JSON object/],
    ['/control/controller/restart-leader', { mode: 'nuke' }, 400, /kill or graceful/],
    ['/control/nope', {}, 404, /no route/],
  ])('POST %s %j -> %i', async (path, body, status, msg) => {
    const res = await call('POST', path, body);
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: string }).error).toMatch(msg);
  });
});
