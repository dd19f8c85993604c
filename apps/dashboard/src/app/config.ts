import { z } from 'zod';
import { clusterEnvShape, commonEnvShape, env, storeEnvShape } from '@defender/nest-common';

const httpUrl = z.string().url('must be an http(s) URL').refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL');

/** Comma-separated http(s) URLs (empty: none). */
const urlList = () =>
  z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim().replace(/\/+$/, ''))
        .filter((s) => s.length > 0),
    )
    .pipe(z.array(httpUrl).max(20, 'at most 20 URLs'));

/** The dashboard's environment (see apps/dashboard/README.md). */
export const dashboardEnvSchema = z
  .object({
    ...commonEnvShape(8083),
    ...clusterEnvShape(),
    ...storeEnvShape(),
    POD_NAME: env.optionalString(),
    /** Election bucket and name of the controllers (who leads). */
    ELECTION_KV_BUCKET: env.natsName('elections'),
    ELECTION_NAME: env.natsName('assignment-controller'),
    /** Controller replicas' HTTP base URLs: their /api/v1/status gives the trigger state. Empty: the map only. */
    CONTROLLER_URLS: urlList(),
    /** The alarm and hold stream (`defense.alarms.>`, `defense.holds.>`). */
    DEFENSE_EVENTS_STREAM: env.natsName('defense-events'),
    /** Alarms and holds kept for the feed. */
    ALARM_FEED_SIZE: env.int(300, 10, 10_000),
    /** How often the cluster view is refreshed and pushed to browsers. */
    REFRESH_SECONDS: env.seconds(1, 0.2, 60),
    /** Runs shown per U-chart. */
    CHART_RUNS: env.int(100, 10, 1000),
    /**
     * Host names the dashboard answers to besides addresses, `localhost` and cluster Service names
     * (comma-separated; `*.example.com` for subdomains), e.g. its Ingress host: any other `Host` is refused
     * (DNS rebinding; web/host-guard.ts).
     */
    DASHBOARD_ALLOWED_HOSTS: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter((s) => s.length > 0),
      )
      .pipe(z.array(z.string().regex(/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/, 'each entry must be a host name or *.domain')).max(50, 'at most 50 names')),
    /** Local fab only: its control endpoint (crash / add defender, restart leader) and token. */
    LOCAL_FAB_CONTROL_URL: httpUrl.optional(),
    LOCAL_FAB_CONTROL_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  })
  .superRefine(
    (c, ctx) => {
      if ((c.LOCAL_FAB_CONTROL_URL === undefined) !== (c.LOCAL_FAB_CONTROL_TOKEN === undefined)) {
        ctx.addIssue({ code: 'custom', path: ['LOCAL_FAB_CONTROL_URL'], message: 'LOCAL_FAB_CONTROL_URL and LOCAL_FAB_CONTROL_TOKEN go together' });
      }
    },
    { when: () => true },
  );

export type DashboardConfig = z.infer<typeof dashboardEnvSchema>;
