import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { buildAssignmentMap } from '@defender/membership';
import { AssignmentMapBucket, HeartbeatBucket, openBucket } from '@defender/nats-kv';
import { describeAppProcess, waitFor } from '@defender/infra-harness';

let n = 0;

describeAppProcess({
  app: 'defender',
  validEnv: () => {
    const tag = `main-${process.pid}-${++n}`;
    return {
      NATS_KV_STABLE_IDS: `ids-${tag}`,
      NATS_KV_HEARTBEATS: `hb-${tag}`,
      NATS_KV_ASSIGNMENTS: `map-${tag}`,
      HEARTBEAT_INTERVAL_SECONDS: '0.5',
      SQLITE_PATH: join(tmpdir(), `defender-${tag}`, 'd.db'),
    };
  },
  // Ready once it holds a stable ID and has applied an assignment map: publish one for it.
  makeReady: async ({ env }) => {
    const nc = await connect({ servers: env['NATS_SERVERS'] });
    try {
      const hb = new HeartbeatBucket(await openBucket(nc, env['NATS_KV_HEARTBEATS']!), env['NATS_KV_HEARTBEATS']);
      await waitFor('heartbeat', async () => (await hb.readAll()).heartbeats.length === 1, 20_000);
      const maps = new AssignmentMapBucket(await openBucket(nc, env['NATS_KV_ASSIGNMENTS']!), env['NATS_KV_ASSIGNMENTS']);
      const map = buildAssignmentMap({
        version: 1,
        now: new Date(),
        fencingToken: '1',
        controllerId: 'test',
        trigger: 'cold_start',
        state: 'STABLE',
        lifecycleState: 'post_cold_start',
        firstAssignmentAt: new Date().toISOString(),
        assignments: { 'tool1:ch1': 'defender-0' },
        defenders: [{ id: 'defender-0' }],
      });
      await maps.publish(map, null);
    } finally {
      await nc.drain();
    }
  },
  readyChecks: ['nats', 'store', 'stable-id', 'assignment'],
  invalidEnv: { HTTP_PORT: '70000', NATS_SERVERS: 'not a url', LOG_LEVEL: 'loud', MAX_DEFENDERS: '0', HEARTBEAT_INTERVAL_SECONDS: 'soon' },
  invalidVariables: ['HTTP_PORT', 'NATS_SERVERS', 'LOG_LEVEL', 'MAX_DEFENDERS', 'HEARTBEAT_INTERVAL_SECONDS'],
});
