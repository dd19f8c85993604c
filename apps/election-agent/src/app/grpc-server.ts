import { INestApplication } from '@nestjs/common';
import { MicroserviceOptions, Transport } from '@nestjs/microservices';
import { ReflectionService } from '@grpc/reflection';
import { join } from 'node:path';

/**
 * Attaches the gRPC server (grpc.health.v1 now; the election service joins it) to the Nest app and
 * adds server reflection so `grpcurl` can list the services.
 */
export async function attachGrpc(
  app: INestApplication,
  /** `protoDir`: beside main.js in the bundle (copied asset), src/proto when run from source. */
  opts: { host: string; port: number; protoDir: string },
): Promise<void> {
  app.connectMicroservice<MicroserviceOptions>(
    {
      transport: Transport.GRPC,
      options: {
        package: ['grpc.health.v1'],
        protoPath: [join(opts.protoDir, 'health.proto')],
        url: `${opts.host}:${opts.port}`,
        loader: { keepCase: true, enums: Number, defaults: true, oneofs: true },
        onLoadPackageDefinition: (pkg, server) => {
          new ReflectionService(pkg).addToServer(server);
        },
      },
    },
    { inheritAppConfig: true },
  );
  await app.startAllMicroservices();
}
