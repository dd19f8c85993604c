import { Inject, Injectable, Logger, NestMiddleware } from '@nestjs/common';
import { AUTH_POLICY, FAILED_AUTH_LIMITER } from '../tokens';
import { AuthPolicy, decide, Principal } from './auth';
import { clientOf, FailedAuthLimiter } from './failed-auth-limiter';

/** The request as the middleware and the controllers see it. */
export interface AuthedRequest {
  readonly method: string;
  readonly originalUrl?: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly socket: { readonly remoteAddress?: string | undefined };
  /** Set by {@link AuthMiddleware}: who sends the request (undefined on an open path without credentials). */
  principal?: Principal;
}
interface Res {
  status(code: number): Res;
  setHeader(name: string, value: string): unknown;
  json(body: unknown): unknown;
  redirect(status: number, url: string): unknown;
}

/**
 * Applies the authentication policy (auth.ts) to every request after the host guard: 401 for an
 * unauthenticated API call, the login page for a page load, 403 for a viewer's state-changing request,
 * 429 for a wrong bearer token from a client that sent too many wrong ones (failed-auth-limiter.ts);
 * a right token always passes.
 */
@Injectable()
export class AuthMiddleware implements NestMiddleware {
  private readonly log = new Logger('DashboardAuth');

  constructor(
    @Inject(AUTH_POLICY) private readonly policy: AuthPolicy,
    @Inject(FAILED_AUTH_LIMITER) private readonly limiter: FailedAuthLimiter,
  ) {}

  use(req: AuthedRequest, res: Res, next: () => void): void {
    // Only a presented bearer token can be a guess (a session cookie is signed with its token).
    const guess = this.policy.mode !== 'none' && req.headers['authorization'] !== undefined;
    const d = decide({ method: req.method, path: req.originalUrl ?? req.url, headers: req.headers, peer: req.socket.remoteAddress }, this.policy, Date.now());
    // A right token is never throttled, whoever else failed (issue 50): only a wrong one is counted,
    // and answered 429 instead of 401 once its client has sent too many.
    if (guess && d.kind === 'unauthenticated') {
      const wait = throttleWrongCredential(this.limiter, requestClient(req, this.policy), this.log);
      if (wait > 0) {
        res.setHeader('retry-after', String(wait));
        res.status(429).json({ statusCode: 429, message: throttledMessage(wait) });
        return;
      }
    } else if (guess && d.kind === 'pass' && !d.principal) {
      // A wrong token on an open path (health, metrics) is still a guess; the path stays open.
      throttleWrongCredential(this.limiter, requestClient(req, this.policy), this.log);
    }
    switch (d.kind) {
      case 'pass':
        if (d.principal) req.principal = d.principal;
        return next();
      case 'login':
        res.redirect(302, d.location);
        return;
      case 'unauthenticated':
        res.setHeader('www-authenticate', 'Bearer realm="dashboard"');
        res.status(d.status).json({ statusCode: d.status, message: d.message });
        return;
      case 'forbidden':
        res.status(d.status).json({ statusCode: d.status, message: d.message });
        return;
    }
  }
}

/** The client a request's wrong credentials count against (failed-auth-limiter.ts clientOf). */
export function requestClient(req: Pick<AuthedRequest, 'headers' | 'socket'>, policy: AuthPolicy): string {
  return clientOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], (a) => policy.proxy?.trusted.trusts(a) ?? false);
}

/** The 429 answer's message. */
export function throttledMessage(seconds: number): string {
  return `too many wrong dashboard tokens: try again in ${seconds} s`;
}

/**
 * Counts a wrong credential from `client` and returns the seconds it must wait (0: answer 401 as
 * usual; more: it had already sent too many, answer 429 with Retry-After). Logs once when this makes
 * the client wait.
 */
export function throttleWrongCredential(limiter: FailedAuthLimiter, client: string, log: Pick<Logger, 'warn'>): number {
  const before = Math.ceil(limiter.retryAfterMs(client) / 1000);
  limiter.recordFailure(client);
  if (before === 0 && limiter.retryAfterMs(client) > 0) {
    log.warn(`wrong dashboard tokens from ${client}: further wrong ones are answered 429 for a while (brute force?); right tokens still pass`);
  }
  return before;
}
