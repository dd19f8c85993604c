import type { MonitorViolation } from '@defender/defense-rules';
import { MAX_LISTED_VIOLATION_BYTES, MAX_LISTED_VIOLATIONS, runAlarm } from './alarms';

const run = { chamber: { toolId: 'T'.repeat(128), chamberId: 'C'.repeat(128) }, sequence: 9, runId: 'r'.repeat(256), recipe: 'R'.repeat(256) };
const monitor = { modelKey: `${'R'.repeat(256)}|m:model`, action: 'ALARM', t2: 1e6, spe: 1e6, modelVersion: 3 };

/** Indicator `i`'s key with its SVID and window names at their longest. */
const key = (i: number) => `${'R'.repeat(256)}|m/${String(i).padStart(6, '0')}${'S'.repeat(250)}@${'W'.repeat(128)}:ma_max-run_mean`;

function violations(n: number): MonitorViolation[] {
  const out: MonitorViolation[] = [
    { rule: 'T2', key: monitor.modelKey, value: 1e6, limit: 14.2, contributions: [0, 1, 2, 3, 4].map((c) => ({ key: key(c), share: 0.2 })) },
    { rule: 'SPE', key: monitor.modelKey, value: 1e6, limit: 6.5, contributions: [5, 6, 7, 8, 9].map((c) => ({ key: key(c), share: 0.2 })) },
  ];
  for (let i = 0; i < n; i++) out.push({ rule: 'LIMIT', key: key(i), value: 100 + i, lcl: -1, ucl: 1, center: 0 });
  return out;
}

describe('runAlarm size', () => {
  it('stays under 80 KB with thousands of violations and every name at its limit, counting every violation', () => {
    const alarm = runAlarm([], violations(5_000), run, monitor);
    const details = alarm?.details as { violationCount: number; byRule: Record<string, number>; violations: unknown[] };
    const bytes = Buffer.byteLength(JSON.stringify(alarm));
    expect(bytes).toBeLessThan(80_000);
    expect(Buffer.byteLength(JSON.stringify(details.violations))).toBeLessThanOrEqual(MAX_LISTED_VIOLATION_BYTES + 2);
    expect(details.violations.length).toBeGreaterThan(10);
    expect(details.violations.length).toBeLessThan(MAX_LISTED_VIOLATIONS);
    expect(details.violationCount).toBe(5_002);
    expect(details.byRule).toEqual({ T2: 1, SPE: 1, LIMIT: 5_000 });
    // The worst first: the model's statistics, then the indicator furthest beyond its limits.
    expect((details.violations as { rule: string }[]).slice(0, 3).map((v) => v.rule)).toEqual(['T2', 'SPE', 'LIMIT']);
    expect((details.violations[2] as { value: number }).value).toBe(100 + 4_999);
    expect(alarm?.message).toMatch(/5002 violations/);
  });

  it('lists up to 100 short violations in full', () => {
    const short: MonitorViolation[] = Array.from({ length: 150 }, (_, i) => ({ rule: 'LIMIT', key: `R|m/S${i}@Main:mean`, value: 10 + i, lcl: -1, ucl: 1, center: 0 }));
    const details = runAlarm([], short, { ...run, chamber: { toolId: 'T1', chamberId: 'C1' }, runId: 'r1', recipe: 'R' }, { ...monitor, modelKey: 'R|m:model' })?.details as { violations: unknown[]; violationCount: number };
    expect([details.violations.length, details.violationCount]).toEqual([MAX_LISTED_VIOLATIONS, 150]);
  });

  it('always lists the lead violation, however long', () => {
    const one = violations(0).slice(0, 1);
    const details = runAlarm([], one, run, monitor)?.details as { violations: { rule: string }[] };
    expect(details.violations.map((v) => v.rule)).toEqual(['T2']);
  });
});
