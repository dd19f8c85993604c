import { freePort, waitFor } from '../ports';
import { getJson, spawnBuiltApp, SpawnedApp } from '../process';
import { natsRoleOfApp } from '../nats-auth';
import { describeWithInfra, testNatsEnv } from './infra';

export interface AppProcessSuiteOptions {
  /**
   * App name as it appears in logs and metric labels. Its built bundle runs
   * (`dist/apps/<app>/main.js`; the app's test target depends on its build), so the contract is
   * checked on what ships, and processes start in well under a second.
   */
  app: string;
  /**
   * The NATS role the app runs as on the run's (TLS, per-role users) nats-server: default the app's
   * own (natsRoleOfApp), whose permissions cover the default bucket names only.
   */
  natsRole?: string;
  /** Extra env for a valid start; values may depend on free ports handed in. */
  validEnv?: (ports: { http: number; extra: number }) => Record<string, string>;
  /** An invalid environment and the variables its error report must name. */
  invalidEnv: Record<string, string>;
  invalidVariables: string[];
  /**
   * Brings a started app to readiness when NATS alone is not enough (e.g. publishes an assignment
   * map for a defender). Called once the process is live.
   */
  makeReady?: (ctx: { http: number; extra: number; env: Record<string, string>; app: SpawnedApp }) => Promise<void>;
  /** Readiness checks expected to hold once ready (default: just `nats`). */
  readyChecks?: string[];
  /** Extra checks once the app is ready (e.g. gRPC health). */
  whenReady?: (ctx: { http: number; extra: number; app: SpawnedApp }) => Promise<void>;
}

function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.trim().startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * The app's OpenAPI document at /api/docs/openapi.json and its page at /api/docs: OpenAPI 3, health
 * and metrics among the paths, every operation with a summary and at least one response.
 */
async function checkApiDocs(base: string): Promise<void> {
  const doc = await getJson(`${base}/api/docs/openapi.json`);
  expect(doc.status).toBe(200);
  const body = doc.body as {
    openapi?: string;
    info?: { title?: string };
    paths?: Record<string, Record<string, { summary?: string; responses?: object; security?: Record<string, unknown>[] }>>;
    security?: Record<string, unknown>[];
    components?: { securitySchemes?: Record<string, unknown> };
  };
  expect(body.openapi).toMatch(/^3\./);
  // Swagger UI's Authorize button (issue 52): the bearer scheme defined, and every scheme referred to.
  expect(body.components?.securitySchemes?.['bearer']).toMatchObject({ type: 'http', scheme: 'bearer' });
  const referred = [...(body.security ?? []), ...Object.values(body.paths ?? {}).flatMap((item) => Object.values(item).flatMap((op) => op.security ?? []))].flatMap((r) => Object.keys(r));
  expect([...new Set(referred)].filter((name) => !(name in (body.components?.securitySchemes ?? {})))).toEqual([]);
  expect(Object.keys(body.paths ?? {})).toEqual(expect.arrayContaining(['/health/live', '/health/ready', '/metrics']));
  for (const [path, item] of Object.entries(body.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      expect([`${method} ${path}`, typeof op.summary === 'string' && op.summary.length > 0]).toEqual([`${method} ${path}`, true]);
      expect([`${method} ${path}`, Object.keys(op.responses ?? {}).length > 0]).toEqual([`${method} ${path}`, true]);
    }
  }
  const page = await getJson(`${base}/api/docs`);
  expect(page.status).toBe(200);
  expect(page.text).toContain('swagger-ui');
}

/**
 * The contract every Defender app process honours (issue: workspace): configuration validated
 * before Nest starts with every problem reported and exit code 2; /health/live, /health/ready
 * (false until connections are up), /metrics; its HTTP API documented (/api/docs, matching the routes
 * it serves); JSON logs; clean exit on SIGTERM.
 */
export function describeAppProcess(opts: AppProcessSuiteOptions): void {
  describe(`${opts.app} process: configuration`, () => {
    it('exits with code 2 and names every invalid variable at once', async () => {
      const app = spawnBuiltApp(opts.app, opts.invalidEnv);
      const res = await app.exited;
      expect(res.code).toBe(2);
      const report = jsonLines(app.stderr()).find((l) => l['msg'] === 'invalid configuration');
      const named = ((report?.['problems'] ?? []) as { variable: string }[]).map((p) => p.variable).sort();
      expect(named).toEqual([...opts.invalidVariables].sort());
      for (const v of opts.invalidVariables) expect(app.stderr()).toContain(`  - ${v}: `);
    });
  });

  describeWithInfra(['nats'], `${opts.app} process: health, metrics, shutdown`, () => {
    it('is live at once, ready once NATS is connected (TLS, as its own NATS role), serves metrics, logs JSON, exits 0 on SIGTERM', async () => {
      const http = await freePort();
      const extra = await freePort();
      const env = {
        HTTP_PORT: String(http),
        HTTP_HOST: '127.0.0.1',
        ...testNatsEnv(opts.natsRole ?? natsRoleOfApp(opts.app)),
        ...(opts.validEnv?.({ http, extra }) ?? {}),
      };
      const app = spawnBuiltApp(opts.app, env);
      try {
        await waitFor('liveness', async () => (await getJson(`http://127.0.0.1:${http}/health/live`)).status === 200, 30_000);
        await opts.makeReady?.({ http, extra, env, app });
        await waitFor('readiness', async () => (await getJson(`http://127.0.0.1:${http}/health/ready`)).status === 200, 30_000);
        const ready = await getJson(`http://127.0.0.1:${http}/health/ready`);
        const checks = Object.fromEntries((opts.readyChecks ?? ['nats']).map((c) => [c, { ok: true }]));
        expect(ready.body).toMatchObject({ status: 'ready', checks });
        const metrics = await getJson(`http://127.0.0.1:${http}/metrics`);
        expect(metrics.status).toBe(200);
        expect(metrics.text).toMatch(new RegExp(`process_resident_memory_bytes\\{app="${opts.app}"\\} \\d+`));
        await checkApiDocs(`http://127.0.0.1:${http}`);
        await opts.whenReady?.({ http, extra, app });
      } finally {
        const res = await app.stop('SIGTERM');
        expect(res).toEqual({ code: 0, signal: null });
      }
      const lines = jsonLines(app.stdout());
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((l) => l['app'] === opts.app && typeof l['time'] === 'string')).toBe(true);
      const listening = lines.find((l) => l['msg'] === `${opts.app} listening`);
      expect(listening).toBeDefined();
      // The app compares its OpenAPI document with the routes Express serves once it listens.
      expect(listening?.['apiDocs']).toMatchObject({ page: '/api/docs', json: '/api/docs/openapi.json', undocumented: [], notServed: [] });
    });

    it('stays live but not ready while NATS is unreachable, and still shuts down cleanly', async () => {
      const http = await freePort();
      const extra = await freePort();
      const deadNats = await freePort(); // nothing listens there
      const app = spawnBuiltApp(opts.app, {
        HTTP_PORT: String(http),
        HTTP_HOST: '127.0.0.1',
        NATS_SERVERS: `nats://127.0.0.1:${deadNats}`,
        ...(opts.validEnv?.({ http, extra }) ?? {}),
      });
      try {
        await waitFor('liveness', async () => (await getJson(`http://127.0.0.1:${http}/health/live`)).status === 200, 30_000);
        const ready = await getJson(`http://127.0.0.1:${http}/health/ready`);
        expect(ready.status).toBe(503);
        expect(ready.body).toMatchObject({ status: 'not-ready', checks: { nats: { ok: false } } });
      } finally {
        const res = await app.stop('SIGTERM');
        expect(res).toEqual({ code: 0, signal: null });
      }
    });
  });
}
