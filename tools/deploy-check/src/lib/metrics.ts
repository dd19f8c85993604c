import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { listSourceFiles, readRepoFile, REPO } from './repo';

/** A metric an app exports: name, type and label names. */
export interface MetricDefinition {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'unknown';
  readonly labelNames: readonly string[];
}

const MAKE_PROVIDER = /\bmake(Counter|Gauge|Histogram|Summary)Provider\s*\(/;

/**
 * Requires every source file of apps/ and libs/ that defines metrics through
 * @willsoto/nestjs-prometheus (`make*Provider`), so a test that mocks those factories sees each
 * definition. Returns the files loaded.
 */
export function requireMetricModules(): string[] {
  const files = listSourceFiles(['apps', 'libs']).filter((f) => MAKE_PROVIDER.test(readRepoFile(f)));
  for (const f of files) {
    // Every metrics module of the workspace, found by content.
    require(join(REPO, f));
  }
  return files;
}

/** Names that look like metric names in string literals of apps/ and libs/ (metrics made without the factories). */
export function metricNameLiterals(prefixes: readonly string[]): Set<string> {
  const re = new RegExp(`['"\`]((?:${prefixes.join('|')})[a-z0-9_]+)['"\`]`, 'g');
  const out = new Set<string>();
  for (const f of listSourceFiles(['apps', 'libs'])) for (const m of readRepoFile(f).matchAll(re)) if (m[1]) out.add(m[1]);
  return out;
}

/** prom-client's default Node process metrics (every app enables them). */
export async function defaultMetrics(): Promise<MetricDefinition[]> {
  const register = new Registry();
  collectDefaultMetrics({ register });
  const json = await register.getMetricsAsJSON();
  return json.map((m) => ({ name: m.name, type: String(m.type) as MetricDefinition['type'], labelNames: [] }));
}

/** What one PromQL expression uses. */
export interface PromqlUse {
  readonly errors: string[];
  /** Metric names of vector selectors, with the functions they are inside (outermost first). */
  readonly selectors: { name: string; fns: string[] }[];
  /** Label names in matchers, `by`/`without` and `on`/`ignoring` clauses. */
  readonly labels: string[];
}

/** Grafana's built-in interval variables, replaced by a duration so the expression parses as PromQL. */
export function substituteGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)\b/g, '5m').replace(/\[\$\{?\w+\}?\]/g, '[5m]');
}

/** Parses an expression with Prometheus' own grammar (lezer-promql) and lists what it uses. */
export function analysePromql(expr: string): PromqlUse {
  const text = substituteGrafanaVariables(expr);
  const errors: string[] = [];
  const selectors: { name: string; fns: string[] }[] = [];
  const labels: string[] = [];
  const calls: { fn: string | undefined }[] = [];
  parser.parse(text).iterate({
    enter: (n) => {
      if (n.type.isError) errors.push(`syntax error at ${n.from}: "${text.slice(Math.max(0, n.from - 10), n.to + 10)}"`);
      if (n.name === 'FunctionCall') calls.push({ fn: undefined });
      const call = calls[calls.length - 1];
      if (n.name === 'FunctionIdentifier' && call) call.fn = text.slice(n.from, n.to);
      if (n.name === 'Identifier' && n.node.parent?.name === 'VectorSelector') {
        selectors.push({ name: text.slice(n.from, n.to), fns: calls.map((c) => c.fn ?? '') });
      }
      if (n.name === 'LabelName') labels.push(text.slice(n.from, n.to));
    },
    leave: (n) => {
      if (n.name === 'FunctionCall') calls.pop();
    },
  });
  return { errors, selectors, labels };
}

/** Labels every scraped series carries besides its own: target labels and the apps' default `app` label. */
export const TARGET_LABELS = ['pod', 'instance', 'job', 'namespace', 'service', 'container', 'endpoint', 'app'];

/**
 * Checks one expression against the metrics the apps export: it parses; every metric exists (a
 * histogram by its `_bucket`/`_sum`/`_count` series); `rate`/`increase`/`irate` only over counters
 * and histogram series; `histogram_quantile` over `_bucket`; every label is one the series carry.
 */
export function checkPromql(expr: string, metrics: ReadonlyMap<string, MetricDefinition>): string[] {
  const use = analysePromql(expr);
  const problems = [...use.errors];
  const allowedLabels = new Set(TARGET_LABELS);
  for (const s of use.selectors) {
    const [, baseName, suffix] = /^(.*)_(bucket|sum|count)$/.exec(s.name) ?? [];
    const base = baseName && metrics.get(baseName)?.type === 'histogram' ? metrics.get(baseName) : undefined;
    const m = base ?? metrics.get(s.name);
    if (!m) {
      problems.push(`${s.name} is not exported by any app`);
      continue;
    }
    m.labelNames.forEach((l) => allowedLabels.add(l));
    if (base && suffix === 'bucket') allowedLabels.add('le');
    if (m.type === 'histogram' && !base) problems.push(`${s.name} is a histogram: use ${s.name}_bucket, _sum or _count`);
    const fn = s.fns[s.fns.length - 1];
    if (fn && ['rate', 'increase', 'irate'].includes(fn) && !base && m.type !== 'counter' && m.type !== 'unknown') problems.push(`${fn}() over ${s.name}, a ${m.type}`);
    if (s.fns.includes('histogram_quantile') && !(base && suffix === 'bucket')) problems.push(`histogram_quantile() over ${s.name}, not a histogram's _bucket series`);
  }
  const unknownType = use.selectors.some((s) => metrics.get(s.name)?.type === 'unknown');
  for (const l of use.labels) if (!allowedLabels.has(l) && !unknownType) problems.push(`label "${l}" is not on ${use.selectors.map((s) => s.name).join(', ')}`);
  return problems;
}
