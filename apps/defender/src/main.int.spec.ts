import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { buildAssignmentMap } from '@defender/membership';
import { AssignmentMapBucket, DEFAULT_BUCKETS, HeartbeatBucket, openBucket } from '@defender/nats-kv';
import { describeAppProcess, testNatsConnectOptions, waitFor } from '@defender/infra-harness';

let n = 0;

describeAppProcess({
  app: 'defender',
  validEnv: () => {
    const tag = `main-${process.pid}-${++n}`;
    // The default buckets: the defender's NATS user may write only those (no other test of this project uses them on the run's server).
    return {
      HEARTBEAT_INTERVAL_SECONDS: '0.5',
      SQLITE_PATH: join(tmpdir(), `defender-${tag}`, 'd.db'),
    };
  },
  // Ready once it holds a stable ID and has applied an assignment map: publish one for it, as a controller does.
  makeReady: async () => {
    const nc = await connect(testNatsConnectOptions('controller'));
    try {
      const hb = new HeartbeatBucket(await openBucket(nc, DEFAULT_BUCKETS.heartbeats), DEFAULT_BUCKETS.heartbeats);
      await waitFor('heartbeat', async () => (await hb.readAll()).heartbeats.length === 1, 20_000);
      const maps = new AssignmentMapBucket(await openBucket(nc, DEFAULT_BUCKETS.assignments), DEFAULT_BUCKETS.assignments);
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
