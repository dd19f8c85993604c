import { describeWithInfra } from '@defender/infra-harness';
import { Suite } from './lib/runner';
import { assertInvariants, SUITES, startSuite } from './lib/suites';

/**
 * The seeds' operational scenarios and the infrastructure faults, on real multi-process clusters
 * (built bundles) with shortened intervals. Each scenario writes docs/chaos/<id>.{md,json} and fails
 * only when an invariant is violated; timing targets are reported, not asserted (design.md section 5:
 * targets are measured, never asserted by timed tests).
 */
for (const def of SUITES.filter((d) => d.jestScenarios?.length !== 0)) {
  describeWithInfra(['nats'], `chaos suite: ${def.name}`, () => {
    let suite: Suite | undefined;

    beforeAll(async () => {
      suite = await startSuite(def);
    }, 600_000); // a hang guard: bring-up waits up to 300 s for a stable cluster (scenarios.ts bringUp)

    afterAll(async () => {
      await suite?.stop();
    }, 60_000);

    for (const sc of def.scenarios.filter((x) => def.jestScenarios?.includes(x.id) ?? true)) {
      it(`${sc.id}: every invariant holds`, async () => {
        if (!suite) throw new Error('the suite did not start');
        assertInvariants(await sc.run(suite));
      });
    }
  });
}
