import { AFTER_EVENT_RUNS, BUDGET_ARL, detectionLine, EQUIPMENT_EVENT_KINDS, oracleBound, profileLine, type DetectionMetrics, type ProfileMetrics } from '@defender/fab-sim';
import { normalQuantile } from '@defender/uchart';
import { table } from '../report';
import type { PresetResult, Scenario } from './simulate';

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const num = (x: number | null, digits = 1) => (x === null ? '–' : x.toFixed(digits));

/** The targets of design.md section 5 (detection row) and whether a preset meets each. */
export function targetChecks(m: DetectionMetrics): { what: string; target: string; value: string; met: boolean }[] {
  return [
    { what: 'false alarms, mean chamber', target: '<= 1 %', value: pct(m.perChamber.mean), met: m.perChamber.mean <= 0.01 },
    { what: 'false alarms, worst chamber', target: '<= 2 %', value: pct(m.perChamber.worst), met: m.perChamber.worst <= 0.02 },
    { what: 'holds on clean chambers per 1,000 runs', target: '<= 0.1', value: m.holdsPer1k.toFixed(2), met: m.holdsPer1k <= 0.1 },
    { what: `excursions of ${m.big.minSize} sigma or more detected`, target: '>= 95 %', value: pct(m.big.rate), met: m.big.rate >= 0.95 },
    { what: 'delay p90 (runs)', target: '<= 3', value: num(m.big.delayP90, 0), met: m.big.delayP90 !== null && m.big.delayP90 <= 3 },
  ];
}

/**
 * Internal consistency of a result (what CI's quick mode asserts; never timing): counts add up,
 * rates are the quotients of their counts, every excursion is scored once, delays lie in its runs.
 * Returns the problems found (empty when consistent).
 */
export function consistencyProblems(scenario: Scenario, r: PresetResult): string[] {
  const m = r.metrics;
  const out: string[] = [];
  const expectRuns = scenario.fab.chambers.length * scenario.options.runsPerChamber;
  if (r.runs !== expectRuns) out.push(`runs ${r.runs} != chambers x runs ${expectRuns}`);
  if (m.inControlRuns <= 0) out.push('no in-control runs were judged');
  if (m.inControlRuns > r.runs) out.push('more in-control runs than runs');
  if (m.falseAlarmRuns > m.inControlRuns) out.push('more false-alarm runs than in-control runs');
  if (Math.abs(m.falseAlarmRate - m.falseAlarmRuns / Math.max(1, m.inControlRuns)) > 1e-12)
    out.push('pooled false-alarm rate is not runs / in-control runs');
  if (m.perChamber.worst < m.perChamber.mean - 1e-12) out.push('worst chamber below the mean');
  if (m.cleanInControlRuns > m.inControlRuns) out.push('clean runs exceed in-control runs');
  if (m.cleanHolds > m.cleanInControlRuns) out.push('more holds than clean runs');
  if (m.excursions.length !== scenario.excursions.length) out.push('not every excursion was scored');
  const cellSum = m.cells.reduce((a, c) => a + c.injected, 0);
  if (cellSum !== scenario.excursions.length) out.push(`cells hold ${cellSum} excursions, not ${scenario.excursions.length}`);
  const detectedCells = m.cells.reduce((a, c) => a + c.detected, 0);
  if (detectedCells !== m.all.detected) out.push('cells and total disagree on detections');
  if (m.big.detected > m.big.injected || m.all.detected > m.all.injected) out.push('more detected than injected');
  for (const o of m.excursions) {
    const x = o.excursion;
    if (o.detected !== (o.delayRuns !== null)) out.push(`${x.id}: detected without a delay`);
    if (o.delayRuns !== null && (o.delayRuns < 0 || o.delayRuns > x.endRun - x.startRun))
      out.push(`${x.id}: delay ${o.delayRuns} outside its runs`);
  }
  if (r.phaseOne.max > scenario.options.runsPerChamber) out.push('Phase I longer than the runs');
  return out;
}

/** The Mermaid quadrant chart of detection (>= 2 sigma) against the mean chamber false-alarm rate. */
export function mermaidChart(results: readonly PresetResult[]): string {
  const xMax = Math.max(0.05, ...results.map((r) => r.metrics.perChamber.mean)) * 1.1;
  const lines = [
    '```mermaid',
    'quadrantChart',
    `    title Detection of 2-sigma+ excursions vs false alarms (x axis 0 to ${(100 * xMax).toFixed(0)} %)`,
    '    x-axis Few false alarms --> Many false alarms',
    '    y-axis Misses faults --> Catches faults',
    '    quadrant-1 noisy but catches',
    '    quadrant-2 the goal',
    '    quadrant-3 quiet but blind',
    '    quadrant-4 noisy and blind',
    ...results.map(
      (r) =>
        `    ${r.preset.replace(/[^A-Za-z0-9 _-]/g, '')}: [${(r.metrics.perChamber.mean / xMax).toFixed(3)}, ${r.metrics.big.rate.toFixed(3)}]`,
    ),
    '```',
  ];
  return lines.join('\n');
}

/** The docs/benchmarks.md section body. */
export function renderSection(scenario: Scenario, results: readonly PresetResult[], seconds: number): string {
  const o = scenario.options;
  const head = [
    `Simulated fab (tools/fab-sim, \`${o.profile ?? 'detection'}\` profile): ${scenario.fab.chambers.length} chambers of ${scenario.fab.tools.length} tools, ` +
      `${o.runsPerChamber} runs each (Phase I included), ${scenario.excursions.length} excursions of sizes ${o.sizes.join(', ')} sigma ` +
      `on ${Math.round(100 * (1 - o.cleanShare))} % of the chambers (the others stay clean), seed ${o.seed}; ` +
      `every run through the product's RunEvaluator exactly as a defender evaluates it. ${seconds.toFixed(0)} s in total.`,
    '',
    'False alarms: the share of a chamber\'s judged in-control runs (after Phase I, outside every excursion and the 5 runs after it) ' +
      'with at least one alarm, averaged over chambers, and the worst chamber. Holds: holds placed on the clean chambers per 1,000 of their runs. ' +
      'Detected: an alarm on one of the excursion\'s affected runs; delay: runs from its first affected run to that alarm.',
  ].join('\n');
  const summary = table(
    ['preset', 'in-control runs', 'false alarms (mean chamber)', 'worst chamber', 'holds / 1k (clean)', 'detected >= 2 sigma', 'delay mean / p90', 'detected, all sizes', 'charts / chamber (monitor: indicators + T², SPE)', 'Phase I runs', 'points / run', 'alarm records / alarmed run', 'ms / run'],
    results.map((r) => [
      `\`${r.preset}\``,
      r.metrics.inControlRuns,
      pct(r.metrics.perChamber.mean),
      pct(r.metrics.perChamber.worst),
      r.metrics.holdsPer1k.toFixed(2),
      pct(r.metrics.big.rate),
      `${num(r.metrics.big.delayMean)} / ${num(r.metrics.big.delayP90, 0)}`,
      pct(r.metrics.all.rate),
      `${r.charts.mean.toFixed(0)} (max ${r.charts.max})`,
      `${r.phaseOne.mean.toFixed(0)} (max ${r.phaseOne.max})`,
      r.pointsPerRun.toFixed(0),
      r.alarmsPerAlarmedRun.toFixed(1),
      (r.evaluateMs / Math.max(1, r.runs)).toFixed(2),
    ]),
  );
  const targets = results
    .map((r) => {
      const checks = targetChecks(r.metrics);
      return `- \`${r.preset}\`: ${checks.map((c) => `${c.what} ${c.value} (target ${c.target}: ${c.met ? 'met' : 'missed'})`).join('; ')}`;
    })
    .join('\n');
  const kinds = [...new Set(scenario.excursions.map((x) => x.kind))].sort();
  const sizes = [...new Set(scenario.excursions.map((x) => x.size))].sort((a, b) => a - b);
  const perKind = table(
    ['kind', ...results.flatMap((r) => sizes.map((s) => `${r.preset} ${s} sigma`))],
    kinds.map((k) => [
      k,
      ...results.flatMap((r) =>
        sizes.map((s) => {
          const c = r.metrics.cells.find((x) => x.kind === k && x.size === s);
          return c ? `${c.detected}/${c.injected}${c.delayP90 !== null ? ` (p90 ${c.delayP90})` : ''}` : '–';
        }),
      ),
    ]),
  );
  return [
    head,
    '',
    summary,
    '',
    'Targets (design.md section 5):',
    '',
    targets,
    '',
    mermaidChart(results),
    '',
    'Detected / injected per excursion kind and size (p90 delay in runs over the detected ones):',
    '',
    perKind,
  ].join('\n');
}

/** The targets of issue 49 on the `real-equipment` profile and whether a preset meets each. */
export function profileTargetChecks(m: DetectionMetrics, p: ProfileMetrics): { what: string; target: string; value: string; met: boolean }[] {
  return [
    { what: `false alarms, mean chamber (the ${AFTER_EVENT_RUNS} runs after each event included)`, target: '<= 1 %', value: pct(m.perChamber.mean), met: m.perChamber.mean <= 0.01 },
    { what: 'false alarms, worst chamber', target: '<= 2 %', value: pct(m.perChamber.worst), met: m.perChamber.worst <= 0.02 },
    { what: 'holds on clean chambers per 1,000 runs', target: '<= 0.1', value: m.holdsPer1k.toFixed(2), met: m.holdsPer1k <= 0.1 },
    { what: 'sustained (>= 5 runs) excursions of >= 2 sigma caught before they end', target: '>= 90 %', value: pct(p.sustained.rate), met: p.sustained.rate >= 0.9 },
    { what: 'their delay p90 (runs)', target: '<= 3', value: num(p.sustained.delayP90, 0), met: p.sustained.delayP90 !== null && p.sustained.delayP90 <= 3 },
    { what: 'detected / oracle bound', target: '>= 80 %', value: pct(p.oracle.efficiency), met: p.oracle.efficiency >= 0.8 },
    { what: 'sustained closed-loop faults of >= 2 sigma caught', target: '>= 90 %', value: pct(p.closedLoop.rate), met: p.closedLoop.rate >= 0.9 },
  ];
}

/**
 * The `real-equipment` part of the docs section: what the profile simulates and why, the oracle
 * bound's formula, the figures of each preset run on it and the oracle bound per kind.
 */
export function renderProfileSection(scenario: Scenario, results: readonly PresetResult[]): string {
  const counts = EQUIPMENT_EVENT_KINDS.map((k) => `${scenario.events.filter((e) => e.kind === k).length} ${k}`).join(', ');
  const about = [
    '**The `real-equipment` profile** (tools/fab-sim `real-equipment.ts`; issue 49, item 1) is the `detection` fab of the same seed plus what real tools do and that profile lacks:',
    '',
    '- lattice sensors: a gauge reading whole counts (99-102 mTorr), a reflected power reading 0 or 1 W, a heater-zone stage with levels 0-4 (a percentile of such a sensor moves by one count, many sds);',
    '- equipment events, each shifting a fixed group of coupled sensors together by 1-3 of their run sds: PM (about half the sensors; the PM cycle is 100-200 runs and also restarts the ageing, 1-3 sds over a cycle), chamber clean (every 60-120 runs, 2-4 sensors), part change (every 150-400 runs, 2-3 sensors); production periods of 120-200 runs after a long idle of 1-4 weeks, each with its own mean for every sensor (0.5-1.5 sds from nominal);',
    '- a closed-loop group per chamber (RF: delivered power held by the generator, match load / tune positions and load impedance react; gas: the flow held by its MFC, throttle valve position and MFC valve drive react), the reacting sensors sharing an in-control factor; a `closed-loop` fault moves them along another direction and leaves the held sensor as it was;',
    `- excursions of sizes ${scenario.options.sizes.join(', ')} sigma lasting 1-10 runs (drawn), every kind of the \`detection\` profile plus \`closed-loop\`.`,
    '',
    `Events before the last run: ${scenario.events.length} (${counts}). They reach the engine as a worker applies them (ADR 0019: each before its run, the recipe's monitor state stepped by the strategy's action for its kind: the default preset re-centres the model after a PM, a clean, a part change or a long idle, and starts a new Phase I when re-centring fails); the runs after them count as in-control runs.`,
    '',
    `**Oracle bound** of an excursion: the probability that a detector which knows the fault's direction and size, under the same per-chamber budget (in-control ARL ${BUDGET_ARL} runs, alpha = 1/${BUDGET_ARL} per run), catches it before it ends. Per run, a one-sided z-test of the target statistic at level alpha detects a shift of d sds with probability Phi(d - z(1 - alpha)), z(1 - alpha) = ${normalQuantile(1 - 1 / BUDGET_ARL).toFixed(2)}; over the excursion's runs P = 1 - prod_i (1 - Phi(d_i - z(1 - alpha))), d_i = the size (a drift ramps to it). Oracle efficiency = excursions detected / the sum of their bounds (fab-sim \`oracleBound\`); a chamber that alarms on a share f of its good runs also "catches" an excursion of L runs with probability 1 - (1 - f)^L, so the efficiency is read against those chance detections (next to it in the table, f per chamber). Sustained: >= 5 runs and >= 2 sigma; closed-loop: the sustained \`closed-loop\` ones. REGIME alarms: runs whose alarm names a regime change without its event (the levels of a quarter of the sensors, at least 3, moved 3 sds or more: the model re-centred from the next runs); \`npm run bench:detection -- --profile real-equipment --withhold-events\` runs the same fab with no event reaching the engine.`,
  ].join('\n');
  const withProfile = results.filter((r) => r.profile);
  const figures = table(
    ['preset', 'false alarms (mean / worst chamber)', `false alarms in the ${AFTER_EVENT_RUNS} runs after events`, 'holds / 1k (clean)', 'sustained >= 2 sigma', 'delay p90', 'closed-loop', 'detected / oracle bound', 'detections false alarms alone would give', 'REGIME alarms'],
    withProfile.map((r) => {
      const p = r.profile as ProfileMetrics;
      return [
        `\`${r.preset}\``,
        `${pct(r.metrics.perChamber.mean)} / ${pct(r.metrics.perChamber.worst)}`,
        `${pct(p.afterEvents.rate)} (${p.afterEvents.alarms} of ${p.afterEvents.runs})`,
        r.metrics.holdsPer1k.toFixed(2),
        `${pct(p.sustained.rate)} (${p.sustained.detected} of ${p.sustained.injected})`,
        num(p.sustained.delayP90, 0),
        `${pct(p.closedLoop.rate)} (${p.closedLoop.detected} of ${p.closedLoop.injected})`,
        `${p.oracle.detected} / ${p.oracle.expected.toFixed(1)} = ${pct(p.oracle.efficiency)}`,
        p.oracle.chance.toFixed(1),
        p.regimeAlarms,
      ];
    }),
  );
  const kinds = [...new Set(scenario.excursions.map((x) => x.kind))].sort();
  const perKind = table(
    ['kind', 'excursions', 'oracle bound (sum)', ...withProfile.map((r) => `${r.preset} detected`)],
    kinds.map((k) => {
      const xs = scenario.excursions.filter((x) => x.kind === k);
      return [
        k,
        xs.length,
        xs.reduce((a, x) => a + oracleBound(x), 0).toFixed(1),
        ...withProfile.map((r) => r.metrics.excursions.filter((o) => o.excursion.kind === k && o.detected).length),
      ];
    }),
  );
  const targets = withProfile
    .map((r) => {
      const checks = profileTargetChecks(r.metrics, r.profile as ProfileMetrics);
      return `- \`${r.preset}\`: ${checks.map((c) => `${c.what} ${c.value} (target ${c.target}: ${c.met ? 'met' : 'missed'})`).join('; ')}`;
    })
    .join('\n');
  return [about, '', figures, '', 'Targets (issue 49):', '', targets, '', 'Per kind: excursions, the sum of their oracle bounds, and how many each preset caught:', '', perKind].join('\n');
}

/** The profile's last line (issue 49), after {@link lastLine}; undefined on the `detection` profile. */
export function profileLastLine(scenario: Scenario, result: PresetResult): string | undefined {
  return result.profile ? profileLine(scenario.options.profile ?? 'detection', result.preset, result.metrics, result.profile) : undefined;
}

/** The last stdout line of the benchmark: the default preset's figures. */
export function lastLine(result: PresetResult): string {
  return detectionLine(result.preset, result.metrics);
}
