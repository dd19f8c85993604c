import 'reflect-metadata';
import { join } from 'node:path';
import { runApp } from '@defender/nest-common';
import { resolveProtoRoot } from '@defender/election';
import { AppModule } from './app/app.module';
import { electionAgentEnvSchema } from './app/config';
import { attachGrpc } from './app/grpc-server';

runApp({
  app: 'election-agent',
  apiDescription:
    "The election agent's HTTP side (the election itself is gRPC, see libs/election/proto): health and metrics.",
  schema: electionAgentEnvSchema,
  module: (config) => AppModule.forRoot(config),
  logFields: (config) => (config.POD_NAME ? { pod: config.POD_NAME } : {}),
  beforeListen: async (app, config, logger) => {
    const tls = {
      certFile: config.GRPC_TLS_CERT_FILE,
      keyFile: config.GRPC_TLS_KEY_FILE,
      caFile: config.GRPC_TLS_CA_FILE,
    };
    await attachGrpc(app, {
      host: config.GRPC_HOST,
      port: config.GRPC_PORT,
      protoDir: join(__dirname, 'proto'),
      electionProtoRoot: resolveProtoRoot([join(__dirname, 'proto')]),
      tls,
    });
    logger.info(
      {
        grpc: `${config.GRPC_HOST}:${config.GRPC_PORT}`,
        tls: tls.caFile ? 'mutual' : tls.certFile ? 'server' : 'off',
        auth: config.ELECTION_AUTH_TOKEN ? 'token' : 'off (ELECTION_DEV_NO_AUTH: development only)',
        bucket: config.ELECTION_KV_BUCKET,
        clockSkewMs: config.ELECTION_CLOCK_SKEW_MS,
      },
      'gRPC listening',
    );
  },
});
