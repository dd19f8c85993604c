import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeAppProcess, getJson } from '@defender/infra-harness';

let n = 0;

describeAppProcess({
  app: 'assignment-controller',
  // A standby is ready once NATS and the store are up, whether or not an election agent answers.
  validEnv: () => ({
    SQLITE_PATH: join(tmpdir(), `controller-${process.pid}-${++n}`, 'd.db'),
    ELECTION_AGENT_ADDR: '127.0.0.1:1',
    // The default assignment bucket: the controller's NATS user may write only that one.
  }),
  readyChecks: ['nats', 'store'],
  // What the map's weights are (issue 52, item 3: the dashboard labels them by it): load by default (ADR 0008).
  whenReady: async ({ http }) => {
    expect((await getJson(`http://127.0.0.1:${http}/api/v1/status`)).body).toMatchObject({ isLeader: false, balanceBy: 'load' });
  },
  invalidEnv: { HTTP_PORT: 'eighty', NATS_SERVERS: 'nats://a:4222, bad host', STORE_BACKEND: 'postgres', COLD_START_WINDOW_SECONDS: '0' },
  invalidVariables: ['HTTP_PORT', 'NATS_SERVERS', 'STORE_BACKEND', 'COLD_START_WINDOW_SECONDS'],
});
