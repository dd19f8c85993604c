import 'reflect-metadata';
import { join } from 'node:path';
import { runApp } from '@defender/nest-common';
import { AppModule } from './app/app.module';
import { electionAgentEnvSchema } from './app/config';
import { attachGrpc } from './app/grpc-server';

runApp({
  app: 'election-agent',
  schema: electionAgentEnvSchema,
  module: (config) => AppModule.forRoot(config),
  logFields: (config) => (config.POD_NAME ? { pod: config.POD_NAME } : {}),
  beforeListen: async (app, config, logger) => {
    await attachGrpc(app, { host: config.GRPC_HOST, port: config.GRPC_PORT, protoDir: join(__dirname, 'proto') });
    logger.info({ grpc: `${config.GRPC_HOST}:${config.GRPC_PORT}` }, 'gRPC listening');
  },
});
