import { describeAppProcess } from '@defender/infra-harness';

describeAppProcess({
  app: 'defender',
  entry: 'apps/defender/src/main.ts',
  invalidEnv: { HTTP_PORT: '70000', NATS_SERVERS: 'not a url', LOG_LEVEL: 'loud' },
  invalidVariables: ['HTTP_PORT', 'NATS_SERVERS', 'LOG_LEVEL'],
});
