import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INestApplication } from '@nestjs/common';
import { MicroserviceOptions, Transport } from '@nestjs/microservices';
import { ServerCredentials } from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { ELECTION_PACKAGE, ELECTION_PROTO_FILE, PROTO_LOADER_OPTIONS } from '@defender/election';

/** TLS of the gRPC server: PEM file paths (validated config). */
export interface GrpcTlsFiles {
  certFile?: string;
  keyFile?: string;
  /** When set, clients must present a certificate signed by this CA (mutual TLS). */
  caFile?: string;
}

/** Server credentials: plaintext, TLS, or mutual TLS. */
export function serverCredentials(tls: GrpcTlsFiles): ServerCredentials {
  if (!tls.certFile || !tls.keyFile) return ServerCredentials.createInsecure();
  const ca = tls.caFile ? readFileSync(tls.caFile) : null;
  return ServerCredentials.createSsl(
    ca,
    [{ cert_chain: readFileSync(tls.certFile), private_key: readFileSync(tls.keyFile) }],
    ca !== null,
  );
}

/**
 * Attaches the gRPC server (election.v1 and grpc.health.v1) to the Nest app and adds server
 * reflection so `grpcurl` can list the services.
 */
export async function attachGrpc(
  app: INestApplication,
  opts: {
    host: string;
    port: number;
    /** Holds health.proto: beside main.js in the bundle (copied asset), src/proto when run from source. */
    protoDir: string;
    /** Include root of election/v1/election.proto (see resolveProtoRoot in @defender/election). */
    electionProtoRoot: string;
    tls: GrpcTlsFiles;
  },
): Promise<void> {
  app.connectMicroservice<MicroserviceOptions>(
    {
      transport: Transport.GRPC,
      options: {
        package: ['grpc.health.v1', ELECTION_PACKAGE],
        protoPath: [join(opts.protoDir, 'health.proto'), join(opts.electionProtoRoot, ELECTION_PROTO_FILE)],
        url: `${opts.host}:${opts.port}`,
        credentials: serverCredentials(opts.tls),
        loader: { ...PROTO_LOADER_OPTIONS, includeDirs: [opts.protoDir, opts.electionProtoRoot] },
        onLoadPackageDefinition: (pkg, server) => {
          new ReflectionService(pkg).addToServer(server);
        },
      },
    },
    { inheritAppConfig: true },
  );
  await app.startAllMicroservices();
}
