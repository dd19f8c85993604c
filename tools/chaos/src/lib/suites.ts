import { assertInvariants, ScenarioOutcome, Suite, SuiteOptions } from './runner';
import {
  agentLoss,
  bringUp,
  clockStep,
  coldStart,
  crashDuringRebalancing,
  crashDuringScaling,
  frozenDefender,
  leaderCrash,
  maintenanceRestart,
  multiCrash,
  natsRestart,
  plannedScaleDown,
  plannedScaleUp,
  restartAfterTakeover,
  rollingUpdate,
  singleCrash,
  storeOutage,
} from './scenarios';
import { DEFAULT_SOAK, soak, SoakOptions } from './soak';

/** A named scenario of a suite. */
export interface SuiteScenario {
  readonly id: string;
  readonly run: (suite: Suite) => Promise<ScenarioOutcome>;
}

/** A cluster shape and the scenarios run on it, in order (each leaves the cluster stable). */
export interface SuiteDef {
  readonly name: string;
  readonly chambers: number;
  /** Defenders started before the first scenario (0: the first scenario starts them). */
  readonly defenders: number;
  readonly scenarios: readonly SuiteScenario[];
}

/** Seeds 002/003: scaling, rolling update and defender crashes on a 6-defender cluster. */
export const MEMBERSHIP: SuiteDef = {
  name: 'membership',
  chambers: 48,
  defenders: 6,
  scenarios: [
    { id: 'planned-scale-up', run: (s) => plannedScaleUp(s, 2) },
    { id: 'planned-scale-down', run: (s) => plannedScaleDown(s, 2) },
    { id: 'rolling-update', run: (s) => rollingUpdate(s) },
    { id: 'crash-single', run: (s) => singleCrash(s) },
    { id: 'crash-multiple', run: (s) => multiCrash(s, 2) },
    { id: 'crash-during-rebalancing', run: (s) => crashDuringRebalancing(s) },
    { id: 'crash-during-scaling', run: (s) => crashDuringScaling(s) },
    { id: 'restart-after-takeover', run: (s) => restartAfterTakeover(s) },
  ],
};

/** Controller, election agents, NATS and the store failing under a 4-defender cluster. */
export const CONTROL_PLANE: SuiteDef = {
  name: 'control-plane',
  chambers: 40,
  defenders: 4,
  scenarios: [
    { id: 'leader-crash', run: (s) => leaderCrash(s) },
    { id: 'election-agent-loss', run: (s) => agentLoss(s) },
    { id: 'clock-step', run: (s) => clockStep(s, 30_000) },
    { id: 'frozen-defender', run: (s) => frozenDefender(s) },
    { id: 'store-outage', run: (s) => storeOutage(s, 12_000) },
    // Last: its after-effects (see the report) would blur the scenarios after it.
    { id: 'nats-restart', run: (s) => natsRestart(s, 1500) },
  ],
};

/** Cold start of 10 defenders (restart detection needs a map of >= 10), then the maintenance restart. */
export const LIFECYCLE: SuiteDef = {
  name: 'lifecycle',
  chambers: 40,
  defenders: 0,
  scenarios: [
    { id: 'cold-start', run: (s) => coldStart(s, 10) },
    { id: 'maintenance-restart', run: (s) => maintenanceRestart(s) },
  ],
};

export const SUITES: readonly SuiteDef[] = [LIFECYCLE, MEMBERSHIP, CONTROL_PLANE];

/** Starts a suite's cluster and brings up its defenders. */
export async function startSuite(def: SuiteDef, opts: Omit<SuiteOptions, 'chambers'> = {}): Promise<Suite> {
  const suite = await Suite.start({ chambers: def.chambers, ...opts });
  try {
    if (def.defenders > 0) await bringUp(suite, def.defenders);
    return suite;
  } catch (err) {
    await suite.stop();
    throw err;
  }
}

/** The soak on a fresh 5-defender cluster. */
export async function runSoak(opts: Partial<SoakOptions> = {}): Promise<ScenarioOutcome> {
  const suite = await Suite.start({ chambers: 48, seed: opts.seed ?? DEFAULT_SOAK.seed });
  try {
    await bringUp(suite, 5);
    return await soak(suite, { ...DEFAULT_SOAK, ...opts });
  } finally {
    await suite.stop();
  }
}

export { assertInvariants };
