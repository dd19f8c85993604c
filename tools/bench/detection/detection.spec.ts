import { STRATEGY_PRESETS } from '@defender/defense-rules';
import { consistencyProblems, lastLine, mermaidChart, profileLastLine, profileTargetChecks, renderProfileSection, renderSection, targetChecks } from './render';
import { buildScenario, QUICK_OPTIONS, REAL_EQUIPMENT_QUICK_OPTIONS, runPreset } from './simulate';

// CI's quick mode of `npm run bench:detection`: the same code path on a small fab. It asserts only that
// every preset completes and that its figures are internally consistent — never a detection target
// and never timing (those are the benchmark's to report, in docs/benchmarks.md).
describe('bench:detection quick mode', () => {
  const scenario = buildScenario({ ...QUICK_OPTIONS, tools: 2, runsPerChamber: 100, excursions: 6 });

  it('plans the excursions on the chambers not kept clean, each (kind, size) in turn', () => {
    expect(scenario.excursions.length).toBe(6);
    const faulty = new Set(scenario.excursions.map((x) => x.chamber));
    expect(faulty.size).toBeLessThan(scenario.fab.chambers.length);
    for (const x of scenario.excursions) expect(x.startRun).toBeGreaterThanOrEqual(QUICK_OPTIONS.excursionAfter);
  });

  it.each(STRATEGY_PRESETS.map((p) => [p.name, p] as const))('runs preset %s with consistent figures', (_name, preset) => {
    const r = runPreset(scenario, { name: preset.name, document: preset.document });
    expect(consistencyProblems(scenario, r)).toEqual([]);
    expect(r.metrics.inControlRuns).toBeGreaterThan(0);
    expect(r.phaseOne.max).toBeLessThan(scenario.options.runsPerChamber);
    expect(targetChecks(r.metrics)).toHaveLength(5);
    expect(lastLine(r)).toMatch(
      /^detection: preset \S+ false-alarms \d+\.\d% worst-chamber \d+\.\d% holds-per-1k \d+\.\d detected \d+\.\d% delay-p90 (\d+|n\/a) runs$/,
    );
    const body = renderSection(scenario, [r], 1);
    expect(body).toContain('```mermaid');
    expect(mermaidChart([r])).toContain(`${preset.name}: [`);
  });
});

// `npm run bench:detection -- --profile real-equipment` on a small fab: the same checks plus the
// profile's own figures and its last line (issue 49).
describe('bench:detection quick mode, real-equipment profile', () => {
  const scenario = buildScenario({ ...REAL_EQUIPMENT_QUICK_OPTIONS, tools: 2, runsPerChamber: 70, excursions: 3 });

  it('lists the equipment events and plans its excursions after Phase I', () => {
    expect(scenario.events.length).toBeGreaterThan(0);
    for (const e of scenario.events) expect(e.beforeRun).toBeLessThan(70);
    expect(scenario.excursions.length).toBe(3);
  });

  it('runs the default preset with consistent figures and prints the profile line after the preset line', () => {
    const preset = STRATEGY_PRESETS.find((p) => p.name === 'default');
    if (!preset) throw new Error('no default preset');
    const r = runPreset(scenario, { name: preset.name, document: preset.document });
    expect(consistencyProblems(scenario, r)).toEqual([]);
    const p = r.profile;
    if (!p) throw new Error('no profile figures');
    expect(p.regimeAlarms).toBe(0);
    expect(p.oracle.expected).toBeGreaterThan(0);
    expect(p.oracle.detected).toBe(r.metrics.all.detected);
    expect(p.sustained.detected).toBeLessThanOrEqual(p.sustained.injected);
    expect(profileTargetChecks(r.metrics, p)).toHaveLength(7);
    expect(lastLine(r)).toMatch(/^detection: preset default /);
    expect(profileLastLine(scenario, r)).toMatch(
      /^detection: profile real-equipment preset default false-alarms \d+\.\d% worst-chamber \d+\.\d% holds-per-1k \d+\.\d sustained-2sigma \d+\.\d% oracle-efficiency \d+\.\d% closed-loop \d+\.\d% regime-alarms \d+ delay-p90 (\d+|n\/a) runs$/,
    );
    expect(renderProfileSection(scenario, [r])).toContain('Oracle bound');
  });
});
