import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';
import { Metadata, status } from '@grpc/grpc-js';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ElectionAgentConfig } from '../config';
import { ELECTION_AGENT_CONFIG } from '../tokens';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/**
 * Checks `authorization: Bearer <token>` against ELECTION_AUTH_TOKEN (any of its comma-separated
 * tokens, compared in constant time). Without a configured token every call passes.
 */
@Injectable()
export class ElectionAuthGuard implements CanActivate {
  private readonly accepted: Buffer[];

  constructor(@Inject(ELECTION_AGENT_CONFIG) config: ElectionAgentConfig) {
    this.accepted = (config.ELECTION_AUTH_TOKEN ?? []).map(digest);
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.accepted.length === 0) return true;
    const metadata = context.switchToRpc().getContext<Metadata>();
    const values = metadata?.get('authorization') ?? [];
    if (values.length === 0)
      throw unauthenticated('missing authorization metadata (expected "Bearer <token>")');
    const token = /^Bearer\s+(\S+)$/i.exec(String(values[0]))?.[1];
    if (token === undefined) throw unauthenticated('authorization metadata must be "Bearer <token>"');
    const given = digest(token);
    // Compare with every accepted token so the time taken does not say which one nearly matched.
    const ok = this.accepted.map((t) => timingSafeEqual(t, given)).includes(true);
    if (!ok) throw unauthenticated('invalid token');
    return true;
  }
}

function unauthenticated(message: string): RpcException {
  return new RpcException({ code: status.UNAUTHENTICATED, message });
}
