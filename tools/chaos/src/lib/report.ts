import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GapStats, InvariantResult } from './analysis';
import type { FencingEvidence } from './evidence';
import { DEFAULT_SETTINGS, detectionSeconds, type ClusterSettings } from './settings';
import { timelineChart } from './timeline-chart';

/** A measured quantity against its target. */
export interface Measure {
  readonly name: string;
  /** null: could not be measured (the note says why). */
  readonly value: number | null;
  readonly unit: 's' | 'ms' | 'count' | 'ratio' | '%';
  /** The target at the shortened intervals, as text (e.g. `<= 3.5 s`). */
  readonly target?: string;
  readonly verdict?: 'met' | 'missed' | 'info';
  /** What the same mechanism gives, or must give, at the default intervals. */
  readonly atDefaults?: string;
  readonly note?: string;
}

export interface TimelineEntry {
  /** Seconds since the scenario started. */
  readonly t: number;
  readonly at: string;
  readonly kind: string;
  readonly target?: string;
  readonly detail?: string;
}

export interface ScenarioReport {
  readonly id: string;
  readonly title: string;
  /** What the seeds (or the issue) describe for this scenario. */
  readonly scenario: string;
  readonly startedAt: string;
  readonly durationSeconds: number;
  readonly settings: ClusterSettings;
  readonly cluster: { readonly agents: number; readonly controllers: number; readonly defenders: number; readonly chambers: number; readonly totalWeight: number };
  readonly publisher: { readonly speed: number; readonly runsPerSecond: number; readonly runsPublished: number; readonly retriedAttempts: number };
  readonly measures: readonly Measure[];
  readonly invariants: readonly InvariantResult[];
  readonly fencing: FencingEvidence;
  readonly processing: {
    readonly latencyP50Ms: number | null;
    readonly latencyP99Ms: number | null;
    readonly latencyMaxMs: number | null;
    /** Largest processing gap of any chamber in the scenario, ms. */
    readonly maxGapMs: number;
    /** Chambers with the largest gaps. */
    readonly worstChambers: readonly GapStats[];
  };
  readonly timeline: readonly TimelineEntry[];
  readonly notes: readonly string[];
  /** Every invariant held. */
  readonly ok: boolean;
}

export function reportDir(): string {
  return process.env['CHAOS_REPORT_DIR'] ?? join(__dirname, '..', '..', '..', '..', 'docs', 'chaos');
}

const fmt = (v: number | null, unit: Measure['unit']): string => {
  if (v === null) return 'n/a';
  if (unit === 's') return `${v.toFixed(2)} s`;
  if (unit === 'ms') return `${Math.round(v)} ms`;
  if (unit === 'ratio') return v.toFixed(3);
  if (unit === '%') return `${v.toFixed(1)} %`;
  return String(v);
};

const cell = (s: string | undefined) => (s ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderMarkdown(r: ScenarioReport): string {
  const lines: string[] = [];
  lines.push(`# Chaos scenario: ${r.title}`, '');
  lines.push(`Written by \`tools/chaos\` (\`nx test chaos\`); do not edit. Run ${r.startedAt}, ${r.durationSeconds.toFixed(1)} s.`, '');
  const dependency = r.invariants.filter((i) => !i.ok && i.blocking === false);
  const verdict = !r.ok ? 'VIOLATED' : dependency.length > 0 ? `all of Defender's held; NATS's violated (${dependency.map((i) => i.id).join(', ')})` : 'all held';
  lines.push(`**Invariants: ${verdict}.** ${r.scenario}`, '');
  const s = r.settings;
  lines.push(
    `Cluster: ${r.cluster.agents} election agents, ${r.cluster.controllers} controllers, ${r.cluster.defenders} defenders, ${r.cluster.chambers} chambers ` +
      `(total weight ${r.cluster.totalWeight.toLocaleString('en-US')}), one SQLite store, a private nats-server. ` +
      `Intervals: heartbeat ${s.heartbeatSeconds} s (detection ${3 * s.heartbeatSeconds} s), cold-start window ${s.coldStartWindowSeconds} s, ` +
      `scale window ${s.scaleWindowSeconds} s, election TTL ${s.electionTtlSeconds} s (defaults: ${defaultIntervals()}).`,
    '',
  );
  lines.push(
    `Publisher: ${r.publisher.runsPublished} runs in the scenario, ${r.publisher.runsPerSecond.toFixed(1)} runs/s over all chambers ` +
      `(${r.publisher.speed}x real time), ${r.publisher.retriedAttempts} retried attempts.`,
    '',
  );
  lines.push('## Measurements', '', '| what | measured | target (these intervals) | verdict | at default intervals | note |', '|---|---|---|---|---|---|');
  for (const m of r.measures) {
    lines.push(`| ${cell(m.name)} | ${fmt(m.value, m.unit)} | ${cell(m.target)} | ${m.verdict ?? ''} | ${cell(m.atDefaults)} | ${cell(m.note)} |`);
  }
  lines.push('', '## Invariants', '', '| invariant | result | checked | first violations |', '|---|---|---|---|');
  for (const i of r.invariants) {
    const carried = i.carriedOver ? ` (${i.carriedOver} carried over from an earlier scenario)` : '';
    lines.push(`| ${cell(i.title)} | ${i.ok ? 'held' : `**violated (${i.violationCount})**${i.blocking === false ? ' (not failing)' : ''}`}${carried} | ${cell(i.checked)} | ${cell(i.violations.slice(0, 3).join('; '))} |`);
  }
  const f = r.fencing;
  lines.push(
    '',
    `Fenced writes (a deposed owner's write rejected by the store): ${f.logTotal} in the defenders' logs` +
      `${Object.keys(f.logLines).length ? ` (${Object.entries(f.logLines).map(([p, n]) => `${p}: ${n}`).join(', ')})` : ''}, ` +
      `${f.metricTotal} in \`defender_fenced_writes_total\` of the defenders still running.`,
  );
  const p = r.processing;
  lines.push(
    '',
    '## Processing',
    '',
    `Publication -> commit: p50 ${fmt(p.latencyP50Ms, 'ms')}, p99 ${fmt(p.latencyP99Ms, 'ms')}, max ${fmt(p.latencyMaxMs, 'ms')}. ` +
      `Largest processing gap (a run waiting while its chamber committed nothing): ${fmt(p.maxGapMs, 'ms')}.`,
    '',
    '| chamber | largest gap | worst latency | runs |',
    '|---|---|---|---|',
  );
  for (const g of p.worstChambers) lines.push(`| ${g.chamber} | ${fmt(g.maxStallMs, 'ms')} | ${fmt(g.maxLatencyMs, 'ms')} | ${g.runs} |`);
  lines.push('', '## Timeline', '');
  const chart = timelineChart(`${r.title}: fault, detection, recovery (s from the start)`, r.timeline);
  if (chart) lines.push(chart, '');
  lines.push('| t (s) | event | target | detail |', '|---|---|---|---|');
  for (const e of r.timeline) lines.push(`| ${e.t.toFixed(3)} | ${cell(e.kind)} | ${cell(e.target)} | ${cell(e.detail)} |`);
  if (r.notes.length) {
    lines.push('', '## Notes', '');
    for (const n of r.notes) lines.push(`- ${n}`);
  }
  return lines.join('\n') + '\n';
}

/** Writes `<id>.json` and `<id>.md` and refreshes the index (README.md) of the report directory. */
export function writeReport(r: ScenarioReport, dir = reportDir()): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${r.id}.json`), JSON.stringify(r, null, 2) + '\n');
  writeFileSync(join(dir, `${r.id}.md`), renderMarkdown(r));
  writeIndex(dir);
}

function writeIndex(dir: string): void {
  const reports: ScenarioReport[] = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.json')).sort()) {
    try {
      reports.push(JSON.parse(readFileSync(join(dir, f), 'utf8')) as ScenarioReport);
    } catch (err) {
      process.stderr.write(`chaos: skipping unreadable report ${f}: ${(err as Error).message}\n`);
    }
  }
  reports.sort((a, b) => (a.startedAt < b.startedAt ? -1 : 1));
  const lines = [
    '# Chaos and soak reports',
    '',
    'Written by `tools/chaos` (`npx nx test chaos`, or `npm run chaos` for the long soak); do not edit.',
    'Each scenario drives a real cluster (nats-server, election agents, controllers, defenders, SQLite)',
    'with shortened intervals while a publisher drives runs for every chamber, then checks the',
    'guarantees of design.md section 3 from the store and the streams. Timing targets are scaled to',
    'the shortened intervals; each report says what the default intervals give. Reports ending in',
    '`-defaults` come from `npm run chaos -- suite all --defaults` (production intervals).',
    '',
    'What the runs found in the product, with reproductions: [findings.md](findings.md) (written by hand).',
    '',
    '| scenario | invariants | key measurements | report |',
    '|---|---|---|---|',
  ];
  for (const r of reports) {
    const key = [...r.measures.filter((m) => m.verdict === 'missed'), ...r.measures.filter((m) => m.verdict === 'met' && !m.name.startsWith('processes that exited'))]
      .slice(0, 4)
      .map((m) => `${m.name}: ${fmt(m.value, m.unit)}${m.verdict === 'missed' ? ' (missed)' : ''}`)
      .join('; ');
    lines.push(`| ${cell(r.title)} | ${r.ok ? 'held' : '**VIOLATED**'} | ${cell(key)} | [${r.id}](${r.id}.md) |`);
  }
  writeFileSync(join(dir, 'README.md'), lines.join('\n') + '\n');
}

/**
 * Rewrites every report's Markdown and the index from the JSON beside it (after a change of the
 * renderer: nothing is run again). Returns the report ids.
 */
export function rerenderReports(dir = reportDir()): string[] {
  const ids: string[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
    const report = JSON.parse(readFileSync(join(dir, f), 'utf8')) as ScenarioReport;
    writeFileSync(join(dir, `${report.id}.md`), renderMarkdown(report));
    ids.push(report.id);
  }
  writeIndex(dir);
  return ids;
}

/** The production intervals, in the order the report's cluster line names them. */
function defaultIntervals(): string {
  const d = DEFAULT_SETTINGS;
  return `${d.heartbeatSeconds} s / ${detectionSeconds(d)} s, ${d.coldStartWindowSeconds} s, ${d.scaleWindowSeconds} s, ${d.electionTtlSeconds} s`;
}
