import { xyChart } from '../mermaid';
import { percentile } from '../report';

/** One latency sample (ms) of the pipeline bench with its label, e.g. `SQLite: notification -> first alarm`. */
export interface LatencySample {
  readonly label: string;
  readonly ms: readonly number[];
}

const POINTS: readonly [string, number][] = [
  ['p50', 50],
  ['p90', 90],
  ['p99', 99],
  ['max', 100],
];

/**
 * The latency percentiles of each sample as one Mermaid chart (a line per sample over p50, p90, p99,
 * max), with the target drawn as a line when given; '' when no sample has values.
 */
export function latencyChart(title: string, samples: readonly LatencySample[], target?: { readonly label: string; readonly ms: number }): string {
  const withValues = samples.filter((s) => s.ms.length > 0);
  if (withValues.length === 0) return '';
  return xyChart({
    title,
    categories: POINTS.map(([name]) => name),
    xTitle: 'percentile',
    yTitle: 'ms',
    series: [
      ...withValues.map((s) => ({ kind: 'line' as const, label: s.label, values: POINTS.map(([, p]) => (p === 100 ? Math.max(...s.ms) : percentile([...s.ms], p))) })),
      ...(target ? [{ kind: 'line' as const, label: target.label, values: POINTS.map(() => target.ms) }] : []),
    ],
  });
}
