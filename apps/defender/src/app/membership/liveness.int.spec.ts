import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { parseHeartbeat } from '@defender/contracts';
import { openBucket, PoolExhaustedError, StableIdRegistry, type HeldClaim } from '@defender/nats-kv';
import { describeWithInfra, freePort, imageNodeOptions, spawnBuiltApp, SpawnedApp, testNatsConnectOptions, testNatsEnv, waitFor } from '@defender/infra-harness';

/**
 * Loaded into the defender with `--require`: the first SIGUSR2 saturates its main thread with
 * back-to-back synchronous tasks of TEST_SPIN_MS (what the whole-fab replay showed: U-chart
 * evaluations of up to 2.7 s one after the other, 20 ms of I/O between them), each appended to
 * TEST_TASK_LOG when done as "<begin> <end>" (Unix ms); the second hangs it for good, as an
 * endless loop would.
 */
const LOOP_LOAD = `
const { appendFileSync } = require('node:fs');
let signals = 0;
process.on('SIGUSR2', () => {
  signals += 1;
  if (signals >= 2) for (;;);
  const ms = Number(process.env.TEST_SPIN_MS);
  const spin = () => {
    const begin = Date.now();
    const end = performance.now() + ms;
    while (performance.now() < end);
    appendFileSync(process.env.TEST_TASK_LOG, begin + ' ' + Date.now() + '\\n');
    setTimeout(spin, 20);
  };
  spin();
});
`;

const INTERVAL_S = 2;

describeWithInfra(['nats'], 'defender liveness under a busy or hung main thread (real process, real NATS)', () => {
  // A process start, 12 intervals saturated and the hang's 3: minutes on a loaded machine.
  jest.setTimeout(300_000);
  let nc: NatsConnection;
  let proc: SpawnedApp | undefined;

  beforeAll(async () => {
    nc = await connect(testNatsConnectOptions());
  });
  afterAll(async () => {
    await proc?.stop('SIGKILL');
    await nc.drain();
  });

  it('keeps heartbeating while its event loop runs 1.5-interval tasks back to back, and stops once the loop hangs (process still alive)', async () => {
    const tag = `live-${process.pid}`;
    const dir = mkdtempSync(join(tmpdir(), `defender-${tag}-`));
    const loadFile = join(dir, 'loop-load.js');
    const taskLog = join(dir, 'tasks.log');
    writeFileSync(loadFile, LOOP_LOAD);
    writeFileSync(taskLog, '');
    const names = { ids: `ids-${tag}`, hb: `hb-${tag}`, map: `map-${tag}` };
    const hb = await openBucket(nc, names.hb);
    // Every heartbeat as the NATS server stored it, with the time its thread sent it.
    const stored: { sentAt: number }[] = [];
    const watch = await hb.watch({ key: 'defender-0' });
    void (async () => {
      for await (const e of watch) if (e.operation === 'PUT') stored.push({ sentAt: Date.parse(parseHeartbeat(e.value).sentAt) });
    })();
    /** The main thread's finished tasks, [begin, end] in Unix ms (the defender's clock, as `sentAt`). */
    const tasks = () =>
      readFileSync(taskLog, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ').map(Number) as [number, number]);

    proc = spawnBuiltApp('defender', {
      ...testNatsEnv(),
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(await freePort()),
      NATS_KV_STABLE_IDS: names.ids,
      NATS_KV_HEARTBEATS: names.hb,
      NATS_KV_ASSIGNMENTS: names.map,
      HEARTBEAT_INTERVAL_SECONDS: String(INTERVAL_S),
      MAX_DEFENDERS: '2',
      POD_UID: 'busy',
      LOG_LEVEL: process.env['TEST_APP_LOG_LEVEL'] ?? 'warn',
      SQLITE_PATH: join(dir, 'd.db'),
      NODE_OPTIONS: [imageNodeOptions('defender'), `--require ${loadFile}`].filter(Boolean).join(' '),
      TEST_SPIN_MS: String(1.5 * INTERVAL_S * 1000),
      TEST_TASK_LOG: taskLog,
    });
    const p = proc;
    await waitFor('three heartbeats', async () => stored.length >= 3, 90_000);

    // Saturated: 12 heartbeats while the loop runs 1.5-interval synchronous tasks back to back.
    p.child.kill('SIGUSR2');
    await waitFor('the first task done', async () => tasks().length >= 1, 60_000);
    const from = tasks()[0]![0];
    await waitFor('12 heartbeats while saturated', async () => stored.filter((b) => b.sentAt > from).length >= 12, 120_000);
    const beats = stored.filter((b) => b.sentAt > from).slice(0, 12);
    await waitFor('the task around the 12th heartbeat done', async () => tasks().some(([, end]) => end > beats.at(-1)!.sentAt), 60_000);
    // The beats go on inside the tasks, while the loop is blocked, not only between them (before ADR
    // 0013 every beat waited for the loop to turn: none inside a task, seconds between them, and the
    // controller judged the busy defender dead again and again). The tasks leave the loop free only
    // for a moment each, so most beats fall inside one.
    const done = tasks();
    const inside = beats.filter((b) => done.some(([begin, end]) => begin < b.sentAt && b.sentAt < end));
    expect(inside.length).toBeGreaterThan(beats.length / 2);

    // Hung: the heartbeat stops although the process (and its heartbeat thread) lives on. A successor
    // (here the test) judges the claim as a new pod would, and takes the ID over once it has not been
    // refreshed for 3 intervals.
    p.child.kill('SIGUSR2');
    const successor = new StableIdRegistry(await openBucket(nc, names.ids), { maxDefenders: 1, intervalSeconds: INTERVAL_S, ownerId: 'successor' }, names.ids);
    let taken: HeldClaim | undefined;
    await waitFor(
      'a successor to take the hung defender\'s ID over',
      async () => {
        try {
          taken = await successor.claim();
          return true;
        } catch (err) {
          if (err instanceof PoolExhaustedError) return false; // still refreshed: live
          throw err;
        }
      },
      90_000,
      200,
    );
    expect(taken).toMatchObject({ defenderId: 'defender-0', how: 'stale' });
    expect(p.child.exitCode).toBeNull();
    expect(p.child.signalCode).toBeNull();
    watch.stop();
  });
});
