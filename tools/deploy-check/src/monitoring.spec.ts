import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadAppEnvSpecs } from './lib/app-env';
import { effective } from './lib/env-checks';
import { checkPromql, defaultMetrics, MetricDefinition, metricNameLiterals, requireMetricModules } from './lib/metrics';
import { readRepoFile, REPO } from './lib/repo';
import { composeWorkloads, ComposeService, parseCompose } from './lib/workloads';

/**
 * Prometheus and Grafana (deploy/): the scrape config matches the compose services, the Grafana
 * provisioning matches the compose mounts, and every dashboard query parses as PromQL and uses
 * metrics and labels the apps really export (read from the apps' metric definitions).
 */

const mockMetricDefinitions: MetricDefinition[] = [];

// Records every metric the apps define through @willsoto/nestjs-prometheus, with its type and labels.
jest.mock('@willsoto/nestjs-prometheus', () => {
  const actual = jest.requireActual<Record<string, (o: { name: string; labelNames?: string[] }) => unknown>>('@willsoto/nestjs-prometheus');
  const wrap = (type: MetricDefinition['type'], make: (o: { name: string; labelNames?: string[] }) => unknown) => (o: { name: string; labelNames?: string[] }) => {
    mockMetricDefinitions.push({ name: o.name, type, labelNames: o.labelNames ?? [] });
    return make(o);
  };
  return {
    ...actual,
    makeCounterProvider: wrap('counter', actual['makeCounterProvider']!),
    makeGaugeProvider: wrap('gauge', actual['makeGaugeProvider']!),
    makeHistogramProvider: wrap('histogram', actual['makeHistogramProvider']!),
    makeSummaryProvider: wrap('summary', actual['makeSummaryProvider']!),
  };
});

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type?: string; uid?: string };
  targets?: { expr?: string; refId?: string; datasource?: { uid?: string } }[];
  panels?: Panel[];
}

interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown }[] };
}

const DASHBOARD = 'deploy/grafana/dashboards/defender.json';
const dashboard = JSON.parse(readRepoFile(DASHBOARD)) as Dashboard;
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr ?? '' })));

const compose = parseCompose(readRepoFile('docker-compose.yml'));
const specs = loadAppEnvSpecs();
const specByApp = new Map(specs.map((s) => [s.app, s]));
const apps = specs.map((s) => s.app);

let metrics: Map<string, MetricDefinition>;

beforeAll(async () => {
  const files = requireMetricModules();
  expect(files.length).toBeGreaterThan(0);
  metrics = new Map();
  for (const m of await defaultMetrics()) metrics.set(m.name, m);
  for (const name of metricNameLiterals(['defender_', 'election_agent_'])) metrics.set(name, { name, type: 'unknown', labelNames: [] });
  for (const m of mockMetricDefinitions) metrics.set(m.name, m);
});

describe('Grafana dashboard (deploy/grafana/dashboards/defender.json)', () => {
  it('has a stable uid, unique panel ids and a layout that fits the 24-column grid without overlaps', () => {
    expect(dashboard.uid).toBe('defender-overview');
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Map<string, string>();
    const overlaps: string[] = [];
    for (const p of panels) {
      const g = p.gridPos;
      expect({ panel: p.title, fits: g.x >= 0 && g.w > 0 && g.h > 0 && g.x + g.w <= 24 }).toEqual({ panel: p.title, fits: true });
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          const other = cells.get(`${x},${y}`);
          if (other) overlaps.push(`${p.title} / ${other}`);
          cells.set(`${x},${y}`, p.title);
        }
      }
    }
    expect([...new Set(overlaps)]).toEqual([]);
  });

  it('queries through the dashboard\'s data source variable, so it imports into any Grafana', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toEqual(expect.objectContaining({ type: 'datasource', query: 'prometheus' }));
    for (const p of panels.filter((x) => x.type !== 'row')) {
      expect({ panel: p.title, uid: p.datasource?.uid, targets: (p.targets ?? []).length > 0 }).toEqual({ panel: p.title, uid: '${datasource}', targets: true });
    }
  });

  it('parses every query as PromQL over metrics and labels the apps export', () => {
    const problems = queries.flatMap((q) => checkPromql(q.expr, metrics).map((p) => `${q.panel}: ${p}`));
    expect(problems).toEqual([]);
  });

  it('shows balance, movement, crash events, processing latency, cache hit rate and dead letters', () => {
    const used = new Set(queries.flatMap((q) => [...q.expr.matchAll(/\b(defender_[a-z0-9_]+)/g)].map((m) => m[1]!)));
    for (const metric of [
      'defender_assignment_max_weight',
      'defender_assignment_avg_weight',
      'defender_chamber_movements_total',
      'defender_assignment_moved_weight_fraction',
      'defender_emergency_events_total',
      'defender_process_time_seconds_bucket',
      'defender_cache_hit_rate',
      'defender_dead_letters_total',
    ]) {
      expect({ metric, shown: used.has(metric) }).toEqual({ metric, shown: true });
    }
  });

  it('shows seed 002\'s state machine in a "Cluster state machine" row, and the cache counters beside the hit rate', () => {
    const row = dashboard.panels.find((p) => p.type === 'row' && p.title === 'Cluster state machine');
    expect(row).toBeDefined();
    const next = dashboard.panels.find((p) => p.type === 'row' && p.gridPos.y > row!.gridPos.y);
    const inRow = dashboard.panels.filter((p) => p.type !== 'row' && p.gridPos.y > row!.gridPos.y && (!next || p.gridPos.y < next.gridPos.y));
    // Series names, and for histograms their metric name too (without _bucket, _sum, _count).
    const series = inRow.flatMap((p) => (p.targets ?? []).flatMap((t) => [...(t.expr ?? '').matchAll(/\b(defender_[a-z0-9_]+)/g)].map((m) => m[1]!)));
    const used = new Set([...series, ...series.map((n) => n.replace(/_(bucket|sum|count)$/, ''))]);
    // Every metric of the two state-machine modules, but aliases the dashboard shows under their seed 000 names elsewhere.
    const aliases = new Set(['defender_assignment_map_version', 'defender_stable_id_claimed']);
    const names = (file: string, key: string) => (require(join(REPO, file)) as Record<string, string[]>)[key] ?? [];
    const stateMachine = [
      ...names('libs/controller/src/lib/leadership/cluster-state-metrics.ts', 'CLUSTER_STATE_METRIC_NAMES'),
      ...names('apps/defender/src/app/metrics/membership-metrics.ts', 'DEFENDER_STATE_METRIC_NAMES'),
    ];
    expect(stateMachine.length).toBeGreaterThan(20);
    const missing = stateMachine.filter((m) => !aliases.has(m) && !used.has(m));
    expect(missing).toEqual([]);
    const rate = panels.find((p) => p.title === 'Cache hit rate')!;
    const lookups = panels.find((p) => p.title === 'Cache lookups')!;
    expect(lookups.gridPos).toMatchObject({ y: rate.gridPos.y, x: rate.gridPos.x + rate.gridPos.w });
    expect((lookups.targets ?? []).map((t) => t.expr ?? '').join(' ')).toMatch(/defender_cache_hits_total[\s\S]*defender_cache_misses_total/);
  });
});

describe('alert rules (deploy/prometheus/alerts.yml)', () => {
  interface Rule {
    alert: string;
    expr: string;
    for?: string;
    labels?: { severity?: string };
    annotations?: { summary?: string; description?: string };
  }
  const alerts = parse(readRepoFile('deploy/prometheus/alerts.yml')) as { groups: { name: string; rules: Rule[] }[] };
  const rules = alerts.groups.flatMap((g) => g.rules);

  it('parse as PromQL over metrics and labels the apps export, each with a severity, a summary and what to do', () => {
    const problems = rules.flatMap((r) => checkPromql(r.expr, metrics).map((p) => `${r.alert}: ${p}`));
    expect(problems).toEqual([]);
    for (const r of rules) {
      expect({ alert: r.alert, severity: ['critical', 'warning', 'info'].includes(r.labels?.severity ?? ''), text: (r.annotations?.summary ?? '').length > 0 && (r.annotations?.description ?? '').length > 0 }).toEqual({
        alert: r.alert,
        severity: true,
        text: true,
      });
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });

  it('cover a missing leader, paused processing, dead letters, the alarm budget, fencing and a stream mismatch', () => {
    expect(rules.map((r) => r.alert)).toEqual(expect.arrayContaining(['DefenderNoLeader', 'DefenderProcessingPaused', 'DefenderDeadLetters', 'DefenderAlarmRateAboveBudget', 'DefenderFencedWrites', 'DefenderStoreStreamMismatch', 'DefenderChamberAlarmRateAboveBudget']));
  });

  it('are loaded by Prometheus in compose and ship unchanged as the PrometheusRule of the service-monitor component', () => {
    const config = parse(readRepoFile('deploy/prometheus/prometheus.yml')) as { rule_files?: string[] };
    const prom = compose.services['prometheus']!;
    const mount = (prom.volumes ?? []).map((v) => (typeof v === 'string' ? v.split(':') : [v.source ?? '', v.target ?? ''])).find((v) => v[0] === './deploy/prometheus/alerts.yml')?.[1];
    expect(config.rule_files).toEqual([mount]);
    const rule = parse(readRepoFile('k8s/components/service-monitor/prometheusrules.yaml')) as { kind: string; spec: { groups: unknown } };
    expect(rule.kind).toBe('PrometheusRule');
    expect(rule.spec.groups).toEqual(alerts.groups);
    expect(readRepoFile('k8s/components/service-monitor/kustomization.yaml')).toMatch(/- prometheusrules\.yaml/);
  });
});

describe('the PromQL check catches what it is for', () => {
  it.each([
    ['a syntax error', 'sum(rate(defender_alarms_total[5m])', /syntax error/],
    ['a metric no app exports', 'defender_chambers_assigned', /not exported by any app/],
    ['rate() over a gauge', 'rate(defender_assigned_chambers[5m])', /rate\(\) over defender_assigned_chambers, a gauge/],
    ['a histogram without its series suffix', 'defender_process_time_seconds', /is a histogram/],
    ['a quantile over the _count series', 'histogram_quantile(0.9, rate(defender_process_time_seconds_count[5m]))', /histogram_quantile\(\) over/],
    ['a label the metric does not have', 'sum by (chamber) (rate(defender_dead_letters_total[$__rate_interval]))', /label "chamber"/],
  ])('%s', (_name, expr, message) => {
    expect(checkPromql(expr, metrics)).toEqual([expect.stringMatching(message)]);
  });
});

describe('Prometheus and Grafana in docker-compose.yml', () => {
  const services = compose.services;
  const mountOf = (s: ComposeService, source: string) =>
    (s.volumes ?? []).map((v) => (typeof v === 'string' ? v.split(':') : [v.source ?? '', v.target ?? ''])).find((v) => v[0] === source)?.[1];

  it('run under the monitoring profile, apart from the default stack', () => {
    expect(services['prometheus']?.profiles).toEqual(['monitoring']);
    expect(services['grafana']?.profiles).toEqual(['monitoring']);
  });

  it('scrape every app service on its HTTP port, one job per app, labelling series with the pod', () => {
    const config = parse(readRepoFile('deploy/prometheus/prometheus.yml'), { merge: true }) as {
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[]; relabel_configs?: { target_label?: string }[] }[];
    };
    const wanted = new Map<string, string[]>();
    for (const w of composeWorkloads(compose, apps).workloads) {
      const port = effective(w, specByApp.get(w.app)!, 'HTTP_PORT') as number;
      wanted.set(w.app, [...(wanted.get(w.app) ?? []), `${w.where.replace('service ', '')}:${port}`].sort());
    }
    const scraped = new Map(config.scrape_configs.map((j) => [j.job_name, j.static_configs.flatMap((s) => s.targets).sort()]));
    expect(Object.fromEntries(scraped)).toEqual(Object.fromEntries(wanted));
    for (const j of config.scrape_configs) expect({ job: j.job_name, pod: j.relabel_configs?.some((r) => r.target_label === 'pod') }).toEqual({ job: j.job_name, pod: true });
    const configFile = (services['prometheus']?.command as string[]).find((a) => a.startsWith('--config.file='))?.split('=')[1];
    expect(mountOf(services['prometheus']!, './deploy/prometheus/prometheus.yml')).toBe(configFile);
  });

  it('provision Grafana with the Prometheus service and the dashboard directory it mounts', () => {
    const ds = parse(readRepoFile('deploy/grafana/provisioning/datasources/prometheus.yml')) as { datasources: { uid: string; type: string; url: string }[] };
    expect(ds.datasources).toEqual([expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090' })]);
    const providers = parse(readRepoFile('deploy/grafana/provisioning/dashboards/defender.yml')) as { providers: { options: { path: string } }[] };
    const grafana = services['grafana']!;
    const dashboards = mountOf(grafana, './deploy/grafana/dashboards');
    expect(providers.providers.map((p) => p.options.path)).toEqual([dashboards]);
    expect(mountOf(grafana, './deploy/grafana/provisioning')).toBe('/etc/grafana/provisioning');
    const home = (grafana.environment as Record<string, string>)['GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH'];
    expect(home).toBe(`${dashboards}/defender.json`);
    expect(existsSync(join(REPO, DASHBOARD))).toBe(true);
  });
});
