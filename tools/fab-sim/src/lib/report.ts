import { EXCURSION_KINDS } from './excursions';
import { weightStats, type FabSpec } from './fab';
import { DEFAULT_STRATEGY } from '@defender/defense-rules';
import { ProgressLine, shortDuration, textBar, type ProgressStream } from '@defender/infra-harness';
import type { DetectionMetrics } from './detection-metrics';
import type { Progress, SimulationResult } from './simulator';

const nf = new Intl.NumberFormat('en-US');
export const num = (n: number): string => nf.format(Math.round(n));

/** `12s`, `3m05s`, `1h02m`. */
export const duration = shortDuration;

function compact(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}K`;
  return String(n);
}

/** A one-line progress bar (fits 120 columns). */
export function progressLine(p: Progress, width = 24): string {
  const frac = p.total > 0 ? p.published / p.total : 1;
  const phase = p.phase === 'warmup' ? 'Phase I warm-up' : p.phase === 'paced' ? `sim +${duration(p.simSeconds * 1000)}${p.lagSeconds > 5 ? ` (behind ${duration(p.lagSeconds * 1000)})` : ''}` : p.phase;
  return (
    `fab-sim ${textBar(frac, width)} ${num(p.published)}/${num(p.total)} runs · ${p.runsPerSecond.toFixed(1)}/s · ${phase} · ` +
    `processed ${num(p.processed)} · alarms ${num(p.alarms)} · holds ${num(p.holds)} · excursions caught ${p.detected}/${p.excursions}`
  );
}

/** Renders progress on a terminal (one rewritten line) or as a line every `plainEveryMs` (the shared {@link ProgressLine}). */
export class ProgressRenderer {
  private readonly line: ProgressLine;

  constructor(out: ProgressStream, mode: 'bar' | 'plain' | 'none', plainEveryMs = 10_000) {
    this.line = new ProgressLine(out, mode, plainEveryMs);
  }

  update(p: Progress): void {
    if (p.phase === 'done') this.line.done(progressLine(p));
    else this.line.update(progressLine(p));
  }
}

/** The fab at a glance (tools by type, weights). */
export function fabOverview(fab: FabSpec): string {
  const byType = new Map<string, { tools: number; chambers: number; weight: number }>();
  for (const t of fab.tools) {
    const e = byType.get(t.type) ?? { tools: 0, chambers: 0, weight: 0 };
    e.tools++;
    e.chambers += t.chambers.length;
    e.weight += t.chambers.reduce((a, c) => a + c.weight, 0);
    byType.set(t.type, e);
  }
  const w = weightStats(fab);
  const sensors = fab.chambers.reduce((a, c) => a + c.sensors.length, 0);
  const lines = [
    `fab: ${num(fab.tools.length)} tools, ${num(fab.chambers.length)} chambers (seed ${fab.seed}); weight per run ${compact(w.min)}-${compact(w.max)} samples, median ${compact(w.median)}, p90 ${compact(w.p90)}; the heaviest 10% of chambers carry ${(w.top10Share * 100).toFixed(0)}% of the load`,
    `      ${[...byType.entries()].map(([t, e]) => `${t} ${e.tools}/${e.chambers}`).join(' · ')}  (tools/chambers)`,
    `      ${num(sensors)} analog sensors charted by the default strategy (the chamber monitor: every recipe step x statistic); ${num(fab.chambers.reduce((a, c) => a + c.svidCount, 0) - sensors)} setpoint/state SVIDs (constant per step: checked for a change, not charted)`,
  ];
  return lines.join('\n');
}

/** One detection target of the default strategy against what the run measured. */
export interface TargetVerdict {
  readonly target: string;
  /** `0.9% <= 1 %`: the measured figure against the target. */
  readonly text: string;
  /** null: the run measured nothing for it (e.g. no excursion of that size). */
  readonly met: boolean | null;
}

/**
 * The detection targets (false alarms <= 1 % of in-control runs per chamber on average and <= 2 % on
 * the worst chamber, holds <= 0.1 per 1,000 runs on chambers without an excursion, >= 95 % of the
 * excursions of `big.minSize` sd or more caught, delay p90 <= 3 runs), each met or not.
 */
export function targetVerdicts(d: DetectionMetrics): TargetVerdict[] {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const measured = d.perChamber.chambers > 0;
  return [
    { target: 'false alarms', text: `${pct(d.perChamber.mean)} of in-control runs (mean per chamber) <= 1 %`, met: measured ? d.perChamber.mean <= 0.01 : null },
    { target: 'worst chamber', text: `${pct(d.perChamber.worst)}${d.perChamber.worstChamber ? ` (${d.perChamber.worstChamber})` : ''} <= 2 %`, met: measured ? d.perChamber.worst <= 0.02 : null },
    { target: 'holds', text: `${d.holdsPer1k.toFixed(2)} per 1,000 runs on chambers without an excursion <= 0.1`, met: d.cleanInControlRuns > 0 ? d.holdsPer1k <= 0.1 : null },
    {
      target: 'caught',
      text: `${d.big.detected} of ${d.big.injected} excursions of ${d.big.minSize} sd or more${d.big.injected > 0 ? ` (${pct(d.big.rate)})` : ''} >= 95 %`,
      met: d.big.injected > 0 ? d.big.rate >= 0.95 : null,
    },
    { target: 'delay p90', text: `${d.big.delayP90 ?? '—'} runs <= 3`, met: d.big.delayP90 === null ? null : d.big.delayP90 <= 3 },
  ];
}

/** The targets block of the summary: `targets  3 of 4 met (1 not measured)`, then one line each. */
export function targetLines(d: DetectionMetrics): string[] {
  const v = targetVerdicts(d);
  const judged = v.filter((x) => x.met !== null);
  const unmeasured = v.length - judged.length;
  return [
    `  targets           ${judged.filter((x) => x.met).length} of ${judged.length} met${unmeasured ? ` (${unmeasured} not measured in this run)` : ''}`,
    ...v.map((x) => `    ${x.target.padEnd(16)}${x.text}: ${x.met === null ? 'not measured' : x.met ? 'met' : 'MISSED'}`),
  ];
}

/** The end-of-run summary. */
export function summaryText(r: SimulationResult, ctx: { speed: number | 'max'; store: string }): string {
  const s = r.score;
  const arl = DEFAULT_STRATEGY.budget.alarmArl;
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const lines: string[] = [];
  lines.push('');
  lines.push(`fab-sim summary — session ${r.sessionId}, ${num(r.chambers)} chambers on ${num(r.tools)} tools, speed ${ctx.speed === 'max' ? 'max' : `${ctx.speed}x`}, store ${ctx.store}${r.aborted ? ' (stopped early)' : ''}`);
  lines.push(`  runs published    ${num(r.published)} of ${num(r.total)} in ${duration(r.publishMs)} (${r.runsPerSecond.toFixed(1)} runs/s, ${compact(r.samplesPublished)} samples)`);
  const behind = r.aborted ? 'not processed yet when stopped' : 'not processed before the settle timeout';
  lines.push(`  runs processed    ${num(r.processed)}${r.settled ? ' (all)' : ` — ${num(r.published - r.processed)} ${behind}`}`);
  lines.push(`  Phase I           limits frozen on ${num(r.chartsWithLimits)} charts of ${num(r.chambersWithLimits)}/${num(r.chambers)} chambers`);
  lines.push(
    `  excursions        ${s.injected} injected, ${s.detected} detected${s.injected ? ` (${pct(s.detected / s.injected)})` : ''}${r.excursionsNotReached ? `; ${r.excursionsNotReached} planned ones not reached (stopped early)` : ''}`,
  );
  for (const k of EXCURSION_KINDS) {
    const b = s.byKind[k];
    if (b.injected === 0) continue;
    const delay = b.meanDelay === null ? '—' : `${b.meanDelay.toFixed(1)} mean, ${b.maxDelay} max`;
    lines.push(`    ${k.padEnd(16)}${String(b.detected).padStart(3)}/${b.injected}   detection delay (runs): ${delay}`);
  }
  for (const x of s.excursions.filter((e) => !e.detected)) {
    const e = x.excursion;
    const where = `${e.svid}${e.svid2 ? `/${e.svid2}` : ''}${e.step ? ` in ${e.step}` : ''}`;
    lines.push(`    missed: ${e.id} ${e.kind} ${e.size} sd (${e.target.statistic}) on ${e.chamber} ${where}, runs ${e.startRun + 1}-${e.endRun + 1}`);
  }
  lines.push(`  false alarms      ${num(s.falseAlarms)} alarms on ${num(s.falseAlarmRuns)} of ${num(s.inControlRuns)} in-control runs after Phase I (${pct(s.falseAlarmRunRate)}; the default strategy's budget: 1 alarmed run in ${num(arl)}, ${pct(1 / arl)})`);
  lines.push(`  holds             ${num(r.holdsPlaced)} placed by escalation; ${num(r.chambersOnHold)} chambers on hold now`);
  const d = r.detection;
  lines.push(
    `  per chamber       false alarms ${pct(d.perChamber.mean)} of in-control runs (mean of ${num(d.perChamber.chambers)} chambers), worst ${pct(d.perChamber.worst)}${d.perChamber.worstChamber ? ` (${d.perChamber.worstChamber})` : ''}; ` +
      `holds on the ${num(d.cleanChambers)} chambers without an excursion: ${d.holdsPer1k.toFixed(1)} per 1,000 runs`,
  );
  lines.push(
    `  detection         ${d.big.detected}/${d.big.injected} excursions of ${d.big.minSize} sd or more (${pct(d.big.rate)}), delay p90 ${d.big.delayP90 ?? '—'} runs; all sizes ${d.all.detected}/${d.all.injected}`,
  );
  lines.push(...targetLines(d));
  lines.push(`  ${r.detectionLine}`);
  lines.push(`  ground truth      ${r.groundTruthFile}`);
  return lines.join('\n');
}
