import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { register } from 'prom-client';
import { exposedSample, metricsMovedBy } from '@defender/infra-harness';
import { metricProviders, METRICS } from './election-metrics';
import { ElectionMetricsObserver } from './election-metrics-observer';

/** The adapter with the metric providers ElectionModule registers (prom-client's default registry). */
@Module({ providers: [...metricProviders, ElectionMetricsObserver] })
class ObserverOnlyModule {}


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
    expect(await metricsMovedBy(() => observer.termGranted('controller', false))).toEqual([METRICS.grants]);
    expect(await exposedSample(`${METRICS.grants}{election="controller"}`)).toBe(1);

    expect(await metricsMovedBy(() => observer.termGranted('controller', true))).toEqual([METRICS.grants, METRICS.leaderChanges].sort());
    expect(await exposedSample(`${METRICS.grants}{election="controller"}`)).toBe(2);
    expect(await exposedSample(`${METRICS.leaderChanges}{election="controller"}`)).toBe(1);
  });

  it('renewFailed counts a refused or failed renewal by election and reason', async () => {
    expect(await metricsMovedBy(() => observer.renewFailed('controller', 'superseded'))).toEqual([METRICS.renewFailures]);
    expect(await metricsMovedBy(() => observer.renewFailed('controller', 'unavailable'))).toEqual([METRICS.renewFailures]);
    expect(await exposedSample(`${METRICS.renewFailures}{election="controller",reason="superseded"}`)).toBe(1);
    expect(await exposedSample(`${METRICS.renewFailures}{election="controller",reason="unavailable"}`)).toBe(1);
  });

  it('casConflict counts a lost compare-and-set by election', async () => {
    expect(await metricsMovedBy(() => observer.casConflict('replica'))).toEqual([METRICS.casConflicts]);
    expect(await exposedSample(`${METRICS.casConflicts}{election="replica"}`)).toBe(1);
  });

  it('requestAnswered counts an election.v1 call by method and status code name', async () => {
    expect(await metricsMovedBy(() => observer.requestAnswered('Campaign', 'OK'))).toEqual([METRICS.requests]);
    expect(await metricsMovedBy(() => observer.requestAnswered('Observe', 'UNAVAILABLE'))).toEqual([METRICS.requests]);
    expect(await exposedSample(`${METRICS.requests}{method="Campaign",code="OK"}`)).toBe(1);
    expect(await exposedSample(`${METRICS.requests}{method="Observe",code="UNAVAILABLE"}`)).toBe(1);
  });
});
