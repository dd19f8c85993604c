import { LeaderView } from '../lease';
import { leaseInfoFromWire, leaseInfoToWire, LeaseInfo } from '../proto';
import { ElectionAuthority, LeaseOutcome } from '../server/election-authority';
import { LeaderWatchHub } from '../server/leader-watch-hub';
import { CampaignRequest, LeaseRequest } from '../validation';
import { ObserveHandle } from './election-client';
import { ElectionTransport } from './leader-election';

/** A Campaign or Renew outcome as the API answers it. */
export function leaseInfoOf(outcome: LeaseOutcome): LeaseInfo {
  const v = outcome.view;
  return {
    election: v.election,
    leader: v.leader,
    isLeader: outcome.isLeader,
    fencingToken: v.fencingToken,
    acquiredAtMs: v.acquiredAtMs,
    leaseExpiresAtMs: v.leaseExpiresAtMs,
    ttlMs: outcome.ttlMs,
    agentTimeMs: v.agentTimeMs,
    retryAfterMs: outcome.retryAfterMs,
    state: v.state,
  };
}

/**
 * An {@link ElectionTransport} that calls an {@link ElectionAuthority} in this process (answers go
 * through the wire mapping, as over gRPC). For tests and simulations of apps that campaign.
 */
export class InProcessElectionTransport implements ElectionTransport {
  constructor(
    private readonly authority: ElectionAuthority,
    private readonly hub?: LeaderWatchHub,
  ) {}

  async campaign(req: CampaignRequest): Promise<LeaseInfo> {
    return leaseInfoFromWire(leaseInfoToWire(leaseInfoOf(await this.authority.campaign(req))));
  }

  async renew(req: LeaseRequest): Promise<LeaseInfo> {
    return leaseInfoFromWire(leaseInfoToWire(leaseInfoOf(await this.authority.renew(req))));
  }

  async release(req: LeaseRequest): Promise<{ released: boolean; leader: LeaderView }> {
    const r = await this.authority.release(req);
    return { released: r.released, leader: r.view };
  }

  observe(election: string, handlers: { onState(view: LeaderView): void }): ObserveHandle {
    if (!this.hub) return { cancel: () => undefined };
    return { cancel: this.hub.subscribe(election, (v) => handlers.onState(v)) };
  }
}
