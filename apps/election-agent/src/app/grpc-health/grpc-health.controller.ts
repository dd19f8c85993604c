import { Controller } from '@nestjs/common';
import { GrpcMethod, RpcException } from '@nestjs/microservices';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { HealthRegistry } from '@defender/nest-common';
import { distinctUntilChanged, from, Observable, switchMap, timer } from 'rxjs';

/** grpc.health.v1.HealthCheckResponse.ServingStatus */
export enum ServingStatus {
  UNKNOWN = 0,
  SERVING = 1,
  NOT_SERVING = 2,
  SERVICE_UNKNOWN = 3,
}

interface HealthCheckRequest {
  service?: string;
}
interface HealthCheckResponse {
  status: ServingStatus;
}

/** Services this agent reports on: '' is the server as a whole (the standard's convention). */
const KNOWN_SERVICES = new Set(['', 'grpc.health.v1.Health']);

/** How often Watch re-evaluates readiness, in milliseconds. */
export const WATCH_POLL_MS = 1000;

/**
 * grpc.health.v1.Health backed by the same readiness checks as /health/ready: SERVING only while
 * the agent can reach its NATS KV store, so a load balancer routes around a replica that cannot
 * answer elections.
 */
@Controller()
export class GrpcHealthController {
  constructor(private readonly health: HealthRegistry) {}

  @GrpcMethod('Health', 'Check')
  async check(req: HealthCheckRequest): Promise<HealthCheckResponse> {
    const service = req.service ?? '';
    if (!KNOWN_SERVICES.has(service)) {
      throw new RpcException({ code: GrpcStatus.NOT_FOUND, message: `unknown service "${service}"` });
    }
    return { status: await this.currentStatus() };
  }

  @GrpcMethod('Health', 'Watch')
  watch(req: HealthCheckRequest): Observable<HealthCheckResponse> {
    const service = req.service ?? '';
    const poll = KNOWN_SERVICES.has(service)
      ? timer(0, WATCH_POLL_MS).pipe(switchMap(() => from(this.currentStatus())))
      : timer(0, WATCH_POLL_MS).pipe(switchMap(() => from([ServingStatus.SERVICE_UNKNOWN])));
    return new Observable<HealthCheckResponse>((subscriber) =>
      poll.pipe(distinctUntilChanged()).subscribe({
        next: (s) => subscriber.next({ status: s }),
        error: (e: unknown) => subscriber.error(e),
      }),
    );
  }

  private async currentStatus(): Promise<ServingStatus> {
    return (await this.health.report()).ready ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  }
}
