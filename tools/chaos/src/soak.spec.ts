import { describeWithInfra } from '@defender/infra-harness';
import { assertInvariants, runSoak } from './lib/suites';

/** Short soak for CI: CHAOS_SOAK_SECONDS (default 120; `npm run chaos -- soak` defaults to 600). */
const SECONDS = Number(process.env['CHAOS_SOAK_SECONDS'] ?? 120);

describeWithInfra(['nats'], 'chaos: soak with randomized faults', () => {
  it(
    `${SECONDS} s of randomized faults: every invariant holds`,
    async () => {
      assertInvariants(await runSoak({ seconds: SECONDS, seed: Number(process.env['CHAOS_SEED'] ?? 1) }));
    },
    (SECONDS + 420) * 1000,
  );
});
