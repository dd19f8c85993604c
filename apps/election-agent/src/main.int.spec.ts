import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { describeAppProcess } from '@defender/infra-harness';

type HealthClient = grpc.Client & {
  Check(req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
  Watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
};

function healthClient(port: number): HealthClient {
  const def = protoLoader.loadSync(join(__dirname, 'proto', 'health.proto'), { keepCase: true, enums: String });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    grpc: { health: { v1: { Health: new (addr: string, creds: grpc.ChannelCredentials) => HealthClient } } };
  };
  return new pkg.grpc.health.v1.Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

function check(client: HealthClient, service: string): Promise<{ status: string }> {
  return new Promise((resolve, reject) =>
    client.Check({ service }, (err, res) => (err ? reject(err) : resolve(res!))),
  );
}

describeAppProcess({
  app: 'election-agent',
  validEnv: ({ extra }) => ({ GRPC_HOST: '127.0.0.1', GRPC_PORT: String(extra), ELECTION_AUTH_TOKEN: 'process-test-token-0123456789' }),
  invalidEnv: {
    GRPC_PORT: '-1',
    HTTP_PORT: '8080.5',
    LOG_LEVEL: 'verbose',
    ELECTION_CLOCK_SKEW_MS: 'soon',
    ELECTION_AUTH_TOKEN: 'short',
    ELECTION_KV_BUCKET: 'bad.name',
    GRPC_TLS_KEY_FILE: '/nonexistent/election-agent.key',
  },
  invalidVariables: [
    'GRPC_PORT',
    'HTTP_PORT',
    'LOG_LEVEL',
    'ELECTION_CLOCK_SKEW_MS',
    'ELECTION_AUTH_TOKEN',
    'ELECTION_KV_BUCKET',
    'GRPC_TLS_KEY_FILE',
  ],
  whenReady: async ({ extra }) => {
    const client = healthClient(extra);
    try {
      await expect(check(client, '')).resolves.toEqual({ status: 'SERVING' });
      await expect(check(client, 'no.such.Service')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });

      const first = await new Promise<{ status: string }>((resolve, reject) => {
        const stream = client.Watch({ service: '' });
        stream.once('data', (m: { status: string }) => {
          resolve(m);
          stream.cancel();
        });
        stream.once('error', (e: grpc.ServiceError) => {
          if (e.code !== grpc.status.CANCELLED) reject(e);
        });
      });
      expect(first).toEqual({ status: 'SERVING' });
    } finally {
      client.close();
    }
  },
});
