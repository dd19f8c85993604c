import { xyChart } from '../mermaid';

/** What the charts need of a step of the whole-fab replay. */
export interface StepChartInput {
  readonly speed: number;
  readonly offeredRate: number;
  readonly processedRate: number;
  readonly lagP50: number;
  readonly lagP99: number;
  readonly verdict: { readonly sustained: boolean };
  readonly procs: readonly { readonly name: string; readonly peakRssMb: number }[];
}

/** Throughput, lag and defender memory per step as Mermaid charts (each followed by an empty line). */
export function stepCharts(steps: readonly StepChartInput[], defenders: readonly string[]): string[] {
  if (steps.length === 0) return [];
  const categories = steps.map((s, i) => `${i + 1}: ${s.speed}x${s.verdict.sustained ? '' : ' (not sustained)'}`);
  const charts = [
    xyChart({
      title: 'Runs per second in each step',
      categories,
      xTitle: 'step: speed',
      yTitle: 'runs/s',
      series: [
        { kind: 'bar', label: 'offered (published)', values: steps.map((s) => s.offeredRate) },
        { kind: 'line', label: 'processed (committed in the window)', values: steps.map((s) => s.processedRate) },
      ],
    }),
    xyChart({
      title: 'Lag, notification publish to commit',
      categories,
      xTitle: 'step: speed',
      yTitle: 'ms',
      series: [
        { kind: 'line', label: 'p50', values: steps.map((s) => s.lagP50) },
        { kind: 'line', label: 'p99', values: steps.map((s) => s.lagP99) },
      ],
    }),
    xyChart({
      title: 'Defender peak RSS in each step',
      categories,
      xTitle: 'step: speed',
      yTitle: 'MB',
      series: defenders.map((d) => ({ kind: 'line' as const, label: d, values: steps.map((s) => s.procs.find((p) => p.name === d)?.peakRssMb ?? Number.NaN) })),
    }),
  ];
  return charts.filter((c) => c !== '').flatMap((c) => [c, '']);
}
