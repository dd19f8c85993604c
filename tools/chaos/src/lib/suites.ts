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
import { assignmentBucketLeaderKill, frozenNatsNode, notificationLeaderKill, partitionedNatsNode, rollingNatsRestart, wipedNatsNode } from './scenarios-nats-cluster';
import { PARTITIONS } from './scenarios-partition';
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
  /** NATS nodes (default 1; 3: a cluster with JetStream replicas 3 for every stream and bucket). */
  readonly natsNodes?: number;
  /** The scenarios `nx test chaos` runs (default all; the others run with `npm run chaos -- suite`). */
  readonly jestScenarios?: readonly string[];
  /** Extra environment of every defender of the suite. */
  readonly defenderEnv?: Readonly<Record<string, string>>;
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
  // CI (nx test chaos) runs the compound faults; the single ones have sharper tests in tools/e2e
  // (membership.e2e.spec.ts: planned scale 10 -> 13 -> 10 near the floor, a crash that moves nothing
  // else, a rolling restart that moves no chamber), so CI does not run them twice. npm run chaos: all.
  jestScenarios: ['crash-multiple', 'crash-during-rebalancing', 'crash-during-scaling', 'restart-after-takeover'],
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
  // CI runs the faults no e2e test injects; the leader's SIGKILL, a frozen owner, the store outage and
  // the NATS restart are tests of tools/e2e (membership.e2e.spec.ts, processing.e2e.spec.ts) with
  // exactly-once checked run by run. npm run chaos: all.
  jestScenarios: ['election-agent-loss', 'clock-step'],
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
  // Not in CI (20 defender starts, ~90 s of the CI's longest task, issue 47): the cold start is a test
  // of tools/e2e (membership.e2e.spec.ts: 10 defenders from nothing, one map when the last joins), and
  // the maintenance restart's target is a reported figure, not an invariant. npm run chaos: both.
  jestScenarios: [],
};

/** One node of a 3-node NATS cluster failing (replicas 3) under a 4-defender cluster. */
export const NATS_CLUSTER: SuiteDef = {
  name: 'nats-cluster',
  chambers: 40,
  defenders: 4,
  natsNodes: 3,
  scenarios: [
    { id: 'nats-notification-leader-kill', run: (s) => notificationLeaderKill(s) },
    { id: 'nats-assignment-leader-kill', run: (s) => assignmentBucketLeaderKill(s) },
    { id: 'nats-rolling-restart', run: (s) => rollingNatsRestart(s) },
    { id: 'nats-node-partitioned', run: (s) => partitionedNatsNode(s) },
    { id: 'nats-node-frozen', run: (s) => frozenNatsNode(s) },
    { id: 'nats-node-wiped', run: (s) => wipedNatsNode(s) },
  ],
  // CI runs three that held in every run since (2026-11-27; assignment-leader kill and rolling restart
  // in all 9 runs of the day, notification-leader kill in all but one, fixed since); npm run chaos all six.
  // A frozen, wiped or partitioned leader can make nats-server 2.9 acknowledge and serve runs its
  // committed stream does not hold, or lose acknowledged ones (findings 5 and 7): exactly-once then
  // holds only while the outage's crash maps fence the owners, and a wiped node may let a lagging
  // replica win an election and renumber the stream, which no reader can repair.
  jestScenarios: ['nats-notification-leader-kill', 'nats-assignment-leader-kill', 'nats-rolling-restart'],
};

export const SUITES: readonly SuiteDef[] = [LIFECYCLE, MEMBERSHIP, CONTROL_PLANE, NATS_CLUSTER, PARTITIONS];

/** Starts a suite's cluster and brings up its defenders. */
export async function startSuite(def: SuiteDef, opts: Omit<SuiteOptions, 'chambers'> = {}): Promise<Suite> {
  const suite = await Suite.start({
    chambers: def.chambers,
    ...(def.natsNodes !== undefined ? { natsNodes: def.natsNodes } : {}),
    ...(def.defenderEnv ? { defenderEnv: def.defenderEnv } : {}),
    ...opts,
  });
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
