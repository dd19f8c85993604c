// Reading prom-client's default registry in tests of the apps' metrics adapters: which metrics an
// event moved, and one sample's value.
import { register } from 'prom-client';

/** Every metric of the default registry, by name (its samples serialised). */
async function samplesByMetric(): Promise<Map<string, string>> {
  return new Map((await register.getMetricsAsJSON()).map((m) => [m.name, JSON.stringify(m.values)]));
}

/** The names of the metrics whose samples `event` changed, sorted. */
export async function metricsMovedBy(event: () => unknown): Promise<string[]> {
  const before = await samplesByMetric();
  await event();
  const after = await samplesByMetric();
  return [...after.keys()].filter((name) => after.get(name) !== before.get(name)).sort();
}

/**
 * One sample's value in the registry's exposition text: `sample` is the exposition's name with its
 * labels as printed (`name{a="x",b="y"}`), or undefined when there is no such line.
 */
export async function exposedSample(sample: string): Promise<number | undefined> {
  const line = (await register.metrics()).split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}
