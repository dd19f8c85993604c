import { Controller, Inject, UseGuards } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import { status } from '@grpc/grpc-js';
import { Observable } from 'rxjs';
import {
  CampaignRequestWire,
  campaignRequestFromWire,
  ElectionRequestWire,
  electionRequestFromWire,
  LeaderStateWire,
  leaderStateToWire,
  leaseInfoOf,
  leaseInfoToWire,
  LeaseRequestWire,
  leaseRequestFromWire,
  LeaseResponseWire,
  LeaseStoreUnavailableError,
  ContentionError,
  notOlderLease,
  ReleaseResponseWire,
  viewKey,
} from '@defender/election';
import { ElectionAuthGuard } from './auth.guard';
import { ElectionService } from './election.service';
import { LeaderWatchService } from './election-store.service';
import { grpcStatusOf, toRpcException } from './grpc-errors';
import { ElectionMetricsObserver, type ElectionMethod, type ElectionObserver } from '../metrics/election-metrics-observer';

/**
 * election.v1.Election over gRPC: validates each request at the edge, calls the library's
 * authority, maps its errors to gRPC status codes. See libs/election/proto/election/v1/election.proto.
 */
@Controller()
@UseGuards(ElectionAuthGuard)
export class ElectionGrpcController {
  constructor(
    private readonly election: ElectionService,
    private readonly watch: LeaderWatchService,
    @Inject(ElectionMetricsObserver) private readonly metrics: ElectionObserver,
  ) {}

  @GrpcMethod('Election', 'Campaign')
  campaign(req: CampaignRequestWire): Promise<LeaseResponseWire> {
    return this.unary('Campaign', async () => {
      const outcome = await this.election.authority.campaign(campaignRequestFromWire(req));
      return leaseInfoToWire(leaseInfoOf(outcome));
    });
  }

  @GrpcMethod('Election', 'Renew')
  renew(req: LeaseRequestWire): Promise<LeaseResponseWire> {
    return this.unary('Renew', async () => {
      const r = leaseRequestFromWire(req);
      try {
        return leaseInfoToWire(leaseInfoOf(await this.election.authority.renew(r)));
      } catch (err) {
        const reason =
          err instanceof LeaseStoreUnavailableError
            ? 'unavailable'
            : err instanceof ContentionError
              ? 'contention'
              : 'internal';
        this.metrics.renewFailed(r.election, reason);
        throw err;
      }
    });
  }

  @GrpcMethod('Election', 'Release')
  release(req: LeaseRequestWire): Promise<ReleaseResponseWire> {
    return this.unary('Release', async () => {
      const r = await this.election.authority.release(leaseRequestFromWire(req));
      return { released: r.released, leader: leaderStateToWire(r.view) };
    });
  }

  @GrpcMethod('Election', 'GetLeader')
  getLeader(req: ElectionRequestWire): Promise<LeaderStateWire> {
    return this.unary('GetLeader', async () =>
      leaderStateToWire(await this.election.authority.getLeader(electionRequestFromWire(req).election)),
    );
  }

  /**
   * The current state (read from the store, so a failure is an immediate UNAVAILABLE and the
   * client tries another agent), then each change from the shared watch of this election. A
   * change older than what was sent is dropped (the watch may lag the first read).
   */
  @GrpcMethod('Election', 'Observe')
  observe(req: ElectionRequestWire): Observable<LeaderStateWire> {
    return new Observable<LeaderStateWire>((subscriber) => {
      let unsubscribe: (() => void) | undefined;
      let closed = false;
      let last = { key: '', token: -1, revision: -1 };
      void (async () => {
        try {
          const { election } = electionRequestFromWire(req);
          const view = await this.election.authority.getLeader(election);
          if (closed) return;
          this.metrics.requestAnswered('Observe', 'OK');
          last = { key: viewKey(view), token: view.fencingToken, revision: view.revision };
          subscriber.next(leaderStateToWire(view));
          unsubscribe = this.watch.hub.subscribe(election, (v) => {
            const key = viewKey(v);
            // Older than what was sent (by term, then revision: a recreated bucket restarts revisions).
            if (!notOlderLease({ token: v.fencingToken, revision: v.revision }, last) || key === last.key) return;
            last = { key, token: v.fencingToken, revision: v.revision };
            subscriber.next(leaderStateToWire(v));
          });
          if (closed) unsubscribe();
        } catch (err) {
          const e = toRpcException(err);
          this.metrics.requestAnswered('Observe', status[(e.getError() as { code: status }).code] ?? 'UNKNOWN');
          subscriber.error(e);
        }
      })();
      return () => {
        closed = true;
        unsubscribe?.();
      };
    });
  }

  private async unary<T>(method: ElectionMethod, fn: () => Promise<T>): Promise<T> {
    try {
      const res = await fn();
      this.metrics.requestAnswered(method, 'OK');
      return res;
    } catch (err) {
      const s = grpcStatusOf(err);
      this.metrics.requestAnswered(method, status[s.code] ?? 'UNKNOWN');
      throw toRpcException(err);
    }
  }
}
