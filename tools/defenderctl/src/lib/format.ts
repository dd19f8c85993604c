import { mapWeightUnit, type AssignmentRow, type Explanation, type MapWeightUnit, type StatusView } from './views';

/** A plain text table: columns padded to their widest cell, numbers right-aligned. */
export function table(head: readonly string[], rows: readonly (readonly (string | number | null)[])[]): string {
  const cells = rows.map((r) => r.map((c) => (c === null ? '-' : String(c))));
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const numeric = head.map((_, i) => cells.length > 0 && cells.every((r) => /^-?[\d.,]+[x%KMG]?$|^-$/.test(r[i] ?? '')));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

export function compact(n: number | null): string {
  if (n === null) return '-';
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}G`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}K`;
  return String(Math.round(n));
}

/**
 * A weight of the assignment map with its unit: `83.7 CPU s/h` when the controller balances by load
 * (expected CPU µs per hour, ADR 0008), `3.8M samples/run` by samples, no unit claimed when no
 * controller says which (`7.5M (map weight)`).
 */
export function mapWeightText(value: number | null, unit: MapWeightUnit): string {
  if (value === null) return '-';
  if (unit === 'load') return `${Number((value / 1e6).toPrecision(3))} CPU s/h`;
  if (unit === 'samples') return `${compact(value)} samples/run`;
  return `${compact(value)} (map weight)`;
}

/** The column head of the map's weight in `status`. */
function mapWeightHead(unit: MapWeightUnit): string {
  return unit === 'load' ? 'LOAD CPU s/h' : unit === 'samples' ? 'SAMPLES/RUN' : 'MAP WEIGHT';
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

export function formatStatus(s: StatusView): string {
  const out: string[] = [];
  out.push(
    `leader      ${s.leader ? `${s.leader.holder} (epoch ${s.leader.epoch}, lease ${s.leader.valid ? `until ${s.leader.leaseExpiresAt}` : 'EXPIRED'})` : 'none (no election record)'}`,
  );
  for (const c of s.controllers) {
    if (!c.reachable) {
      out.push(`controller  ${c.url}: unreachable (${c.error ?? ''})`);
      continue;
    }
    const trig = c.pendingTrigger ? `waiting on ${c.pendingTrigger.trigger} until ${c.pendingTrigger.deadline}` : 'idle';
    out.push(`controller  ${c.controllerId} ${c.isLeader ? 'LEADER' : 'standby'}: ${c.clusterState ?? '-'} / ${c.lifecycle ?? '-'}, trigger ${trig}`);
  }
  if (s.map) {
    const m = s.map;
    out.push(
      `map         v${m.version} (${m.trigger}; published in state ${m.state}) at ${m.timestamp} by ${m.controllerId}, token ${m.fencingToken}: ${m.chamberCount} chambers on ${m.defenderCount} defenders, max/avg ${m.maxOverAvg?.toFixed(3) ?? '-'}, last change moved ${pct(m.movedWeightFraction)} of the weight (floor ${pct(m.floorFraction)})`,
    );
  } else out.push('map         none published yet');
  for (const st of s.streams) {
    out.push(`stream      ${st.name}: ${st.exists ? `created ${st.created ?? '?'}, ${st.messages ?? 0} messages, last seq ${st.lastSequence ?? 0}` : 'MISSING'}`);
  }
  if (s.marks) out.push(`marks       ${s.marks.checked} chambers checked: ${s.marks.onOtherStream.length} on another stream (paused), ${s.marks.unbound} not bound yet`);
  for (const p of s.problems) out.push(`PROBLEM     ${p}`);
  out.push('');
  const unit = mapWeightUnit(s.controllers);
  out.push(
    table(
      ['DEFENDER', 'POD', 'STATE', 'HEARTBEAT', 'CHAMBERS', mapWeightHead(unit), 'VS AVG', 'RUNS', 'MAP SEEN'],
      s.defenders.map((d) => [
        d.defenderId,
        d.podName,
        d.state,
        d.heartbeatAgeSeconds === null ? null : `${d.heartbeatAgeSeconds.toFixed(1)}s ago`,
        d.chambers,
        unit === 'load' ? Number((d.weight / 1e6).toPrecision(3)) : compact(d.weight),
        d.weightVsAvg === null ? null : `${d.weightVsAvg.toFixed(2)}x`,
        d.processedTotal,
        d.mapVersionSeen === null ? null : `v${d.mapVersionSeen}`,
      ]),
    ),
  );
  return out.join('\n');
}

export function formatAssignments(rows: readonly AssignmentRow[], mapVersion: number, defender?: string): string {
  if (rows.length === 0) return defender ? `${defender} owns no chambers in map v${mapVersion}` : `map v${mapVersion} assigns no chambers`;
  const byOwner = new Map<string, AssignmentRow[]>();
  for (const r of rows) byOwner.set(r.owner, [...(byOwner.get(r.owner) ?? []), r]);
  const out: string[] = [`map v${mapVersion}`];
  for (const [owner, list] of byOwner) {
    const total = list.reduce((a, r) => a + (r.weight ?? 0), 0);
    out.push('');
    out.push(`${owner}: ${list.length} chambers${list.some((r) => r.weight !== null) ? `, ${compact(total)} samples/run` : ''}`);
    out.push(table(['CHAMBER', 'SAMPLES/RUN', 'LAST MOVED'], list.map((r) => [r.chamber, compact(r.weight), r.lastMovedAt])));
  }
  return out.join('\n');
}

export function formatExplain(e: Explanation): string {
  const out: string[] = [];
  out.push(`chamber     ${e.chamber}`);
  out.push(`owner       ${e.owner ?? '-'}${e.mapVersion !== null ? ` (map v${e.mapVersion})` : ''}`);
  out.push(`weight      ${e.weight === null ? '- (store not reachable)' : `${e.weight.toLocaleString('en-US')} samples/run${e.weightSource ? ` (${e.weightSource})` : ''}`}`);
  if (e.ownerLoad) {
    out.push(
      `owner load  ${e.ownerLoad.chambers} chambers, ${mapWeightText(e.ownerLoad.weight, e.ownerLoad.weightUnit)} = ${e.ownerLoad.weightVsAvg?.toFixed(3) ?? '-'} x average${e.ownerLoad.alive === false ? ' (NOT heartbeating)' : ''}`,
    );
  }
  out.push('');
  out.push('why:');
  for (const r of e.reasons) out.push(`  - ${r}`);
  out.push('');
  out.push(`moves (map versions ${e.historyFrom ?? '-'}..${e.mapVersion ?? '-'} kept in NATS):`);
  if (e.moves.length === 0) out.push('  none in the kept versions');
  for (const m of e.moves) out.push(`  v${m.version}  ${m.timestamp}  ${m.trigger.padEnd(16)} ${m.from ?? '(new)'} -> ${m.to ?? '(removed)'}`);
  out.push('');
  out.push('monitor:');
  if (e.monitor.length === 0) out.push(e.weight === null ? '  - (store not reachable)' : '  no monitor state stored (no run judged by the chamber monitor yet)');
  for (const m of e.monitor) out.push(`  - ${m.text}`);
  if (e.memory !== null) out.push(`  - the chamber ${e.memory}`);
  return out.join('\n');
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? Number(v.toPrecision(6)).toString() : '-');
const obj = (v: unknown): Record<string, unknown> | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/** The chamber monitor's statistics on the run's point, as the alarm's `details.violations` list them. */
const MONITOR_STATISTICS: Readonly<Record<string, string>> = { T2: 'T²', SPE: 'SPE', MEWMA: 'MEWMA' };
/** The chamber monitor's univariate checks (one indicator each). */
const MONITOR_CHECKS = new Set(['LIMIT', 'RESIDUAL', 'CONSTANT']);

function indicatorName(v: Record<string, unknown>): string {
  return [v['svid'], v['statistic']].filter((x) => typeof x === 'string').join(' ') || String(v['indicatorKey'] ?? '?');
}

function monitorViolationText(v: Record<string, unknown>): string {
  const rule = v['rule'] as string;
  const stat = MONITOR_STATISTICS[rule];
  if (stat) return `${stat} ${num(v['value'])} > ${num(v['limit'])}`;
  if (rule === 'LIMIT') return `${indicatorName(v)} ${num(v['value'])} outside [${num(v['lcl'])}, ${num(v['ucl'])}]`;
  if (rule === 'RESIDUAL') return `${indicatorName(v)} residual ${num(v['value'])} > ${num(v['limit'])}`;
  return `${indicatorName(v)} ${num(v['value'])} left its constant ${num(v['center'])}`;
}

/**
 * What a run alarm's chamber-monitor violations say (libs/pipeline runAlarm: `details.violations`
 * with `rule` T2 / SPE / MEWMA and `value` against `limit`, or LIMIT / RESIDUAL / CONSTANT on one
 * indicator): each statistic against its limit (`T² 41.2 > 30.1, SPE 3.1 > 2.4`), then the top
 * contributor of the first; undefined when the alarm carries none (the per-indicator rules' alarms).
 */
export function monitorSummary(b: Record<string, unknown>): string | undefined {
  const violations = obj(b['details'])?.['violations'];
  if (!Array.isArray(violations)) return undefined;
  const all = violations.map(obj).filter((v): v is Record<string, unknown> => v !== undefined && typeof v['rule'] === 'string' && (v['rule'] in MONITOR_STATISTICS || MONITOR_CHECKS.has(v['rule'])));
  if (all.length === 0) return undefined;
  const listed = all.slice(0, 3);
  const first = listed[0] as Record<string, unknown>;
  const top = Array.isArray(first['contributions']) ? obj(first['contributions'][0]) : undefined;
  const driver = top ? ` (top: ${indicatorName(top)}${typeof top['share'] === 'number' ? ` ${Math.round(top['share'] * 100)} %` : ''})` : '';
  const more = all.length > listed.length ? `, +${all.length - listed.length} more` : '';
  return `${listed.map(monitorViolationText).join(', ')}${more}${driver}`;
}

/** One alarm or hold line of `alarms tail`. */
export function formatAlarmLine(subject: string, at: Date, b: Record<string, unknown>): string {
  const chamber = `${String(b['toolId'] ?? '?')}:${String(b['chamberId'] ?? '?')}`;
  const t = at.toISOString().slice(11, 19);
  if (subject.startsWith('defense.holds.')) return `${t}  ${chamber.padEnd(16)} HOLD  run ${String(b['runId'] ?? '-')}: ${String(b['reason'] ?? '')}`;
  const head = `${t}  ${chamber.padEnd(16)} ${String(b['ruleId'] ?? '?').padEnd(5)} run ${String(b['runId'] ?? '-')}  `;
  const monitor = monitorSummary(b);
  if (monitor) return `${head}${monitor}  ${String(b['action'] ?? '')}`;
  // A per-indicator rule: the value against the limits it was compared with (only those it has).
  const limits = [['LCL', b['lcl']], ['CL', b['center']], ['UCL', b['ucl']]].filter(([, v]) => typeof v === 'number').map(([k, v]) => `${String(k)} ${num(v)}`);
  return `${head}${String(b['svid'] ?? '')} ${String(b['statistic'] ?? '')} = ${num(b['value'])}${limits.length ? ` (${limits.join(', ')})` : ''}  ${String(b['action'] ?? '')}`;
}
