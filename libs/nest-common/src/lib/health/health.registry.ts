import { Injectable } from '@nestjs/common';

/** Result of one readiness check. `detail` is shown on /health/ready. */
export interface CheckResult {
  readonly ok: boolean;
  readonly detail?: string;
}

export type ReadinessCheck = () => CheckResult | Promise<CheckResult>;

export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: Record<string, CheckResult>;
}

/**
 * Components register what must hold for the process to take traffic (a connection up, an ID
 * claimed). Readiness is the conjunction; with no checks registered the process is not ready,
 * because an app that has nothing to wait for should say so explicitly with {@link markReady}.
 */
@Injectable()
export class HealthRegistry {
  private readonly checks = new Map<string, ReadinessCheck>();
  private readonly flags = new Map<string, CheckResult>();
  private shuttingDown = false;

  /** Adds or replaces a readiness check evaluated on every /health/ready request. */
  register(name: string, check: ReadinessCheck): void {
    this.checks.set(name, check);
  }

  /** Sets a flag-style check (for state pushed by events rather than polled). */
  set(name: string, ok: boolean, detail?: string): void {
    this.flags.set(name, { ok, detail });
  }

  markReady(name: string): void {
    this.set(name, true);
  }

  /** Called on SIGTERM: readiness turns false at once so load balancers stop sending work. */
  beginShutdown(): void {
    this.shuttingDown = true;
  }

  async report(): Promise<ReadinessReport> {
    const checks: Record<string, CheckResult> = {};
    for (const [name, result] of this.flags) checks[name] = result;
    for (const [name, check] of this.checks) {
      try {
        checks[name] = await check();
      } catch (err) {
        checks[name] = { ok: false, detail: `check failed: ${(err as Error).message}` };
      }
    }
    if (this.shuttingDown) checks['shutdown'] = { ok: false, detail: 'shutting down' };
    const results = Object.values(checks);
    return { ready: results.length > 0 && results.every((r) => r.ok), checks };
  }
}
