import { Inject, Injectable, NestMiddleware } from '@nestjs/common';
import { DashboardConfig } from '../config';
import { DASHBOARD_CONFIG } from '../tokens';
import { refusal, type HostPolicy } from './host-guard';

interface Req {
  readonly method: string;
  readonly originalUrl?: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}
interface Res {
  status(code: number): Res;
  json(body: unknown): unknown;
}

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** Applies the host and origin guard (host-guard.ts) to every request of the dashboard. */
@Injectable()
export class HostGuardMiddleware implements NestMiddleware {
  private readonly policy: HostPolicy;

  constructor(@Inject(DASHBOARD_CONFIG) config: DashboardConfig) {
    this.policy = { allowedHosts: config.DASHBOARD_ALLOWED_HOSTS };
  }

  use(req: Req, res: Res, next: () => void): void {
    const r = refusal({ method: req.method, path: req.originalUrl ?? req.url, host: one(req.headers['host']), origin: one(req.headers['origin']) }, this.policy);
    if (!r) return next();
    res.status(r.status).json({ statusCode: r.status, message: r.message });
  }
}
