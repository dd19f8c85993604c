import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { register } from 'prom-client';
import { metricProviders, METRICS } from './election-metrics';
import { ElectionMetricsObserver } from './election-metrics-observer';

/** The adapter with the metric providers ElectionModule registers (prom-client's default registry). */
@Module({ providers: [...metricProviders, ElectionMetricsObserver] })
class ObserverOnlyModule {}

/** The value of one sample in the registry's exposition text. */
async function value(sample: string): Promise<number | undefined> {
  const line = (await register.metrics()).split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

/** The names of the metrics whose samples `event` changed. */
async function moved(event: () => void): Promise<string[]> {
  const samples = async () => new Map((await register.getMetricsAsJSON()).map((m) => [m.name, JSON.stringify(m.values)]));
  const before = await samples();
  event();
  const after = await samples();
  return [...after].filter(([name, v]) => before.get(name) !== v).map(([name]) => name).sort();
}

describe("ElectionMetricsObserver (the election agent's one metrics adapter)", () => {
  let app: INestApplicationContext;
  let observer: ElectionMetricsObserver;

  beforeEach(async () => {
    app = await NestFactory.createApplicationContext(ObserverOnlyModule, { logger: false });
    observer = app.get(ElectionMetricsObserver);
  });

  afterEach(async () => {
    await app.close();
    register.clear();
  });

  it('registers every election agent metric', async () => {
    const names = (await register.getMetricsAsJSON()).map((m) => m.name).sort();
    expect(names).toEqual(Object.values(METRICS).sort());
  });

  it('termGranted counts a grant, and a leader change only when the holder changed', async () => {
    expect(await moved(() => observer.termGranted('controller', false))).toEqual([METRICS.grants]);
    expect(await value(`${METRICS.grants}{election="controller"}`)).toBe(1);

    expect(await moved(() => observer.termGranted('controller', true))).toEqual([METRICS.grants, METRICS.leaderChanges].sort());
    expect(await value(`${METRICS.grants}{election="controller"}`)).toBe(2);
    expect(await value(`${METRICS.leaderChanges}{election="controller"}`)).toBe(1);
  });

  it('renewFailed counts a refused or failed renewal by election and reason', async () => {
    expect(await moved(() => observer.renewFailed('controller', 'superseded'))).toEqual([METRICS.renewFailures]);
    expect(await moved(() => observer.renewFailed('controller', 'unavailable'))).toEqual([METRICS.renewFailures]);
    expect(await value(`${METRICS.renewFailures}{election="controller",reason="superseded"}`)).toBe(1);
    expect(await value(`${METRICS.renewFailures}{election="controller",reason="unavailable"}`)).toBe(1);
  });

  it('casConflict counts a lost compare-and-set by election', async () => {
    expect(await moved(() => observer.casConflict('replica'))).toEqual([METRICS.casConflicts]);
    expect(await value(`${METRICS.casConflicts}{election="replica"}`)).toBe(1);
  });

  it('requestAnswered counts an election.v1 call by method and status code name', async () => {
    expect(await moved(() => observer.requestAnswered('Campaign', 'OK'))).toEqual([METRICS.requests]);
    expect(await moved(() => observer.requestAnswered('Observe', 'UNAVAILABLE'))).toEqual([METRICS.requests]);
    expect(await value(`${METRICS.requests}{method="Campaign",code="OK"}`)).toBe(1);
    expect(await value(`${METRICS.requests}{method="Observe",code="UNAVAILABLE"}`)).toBe(1);
  });
});
