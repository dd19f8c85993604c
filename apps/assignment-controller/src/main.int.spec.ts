import { describeAppProcess } from '@defender/infra-harness';

describeAppProcess({
  app: 'assignment-controller',
  entry: 'apps/assignment-controller/src/main.ts',
  invalidEnv: { HTTP_PORT: 'eighty', NATS_SERVERS: 'nats://a:4222, bad host' },
  invalidVariables: ['HTTP_PORT', 'NATS_SERVERS'],
});
