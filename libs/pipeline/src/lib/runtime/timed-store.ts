import type { ChamberRef } from '@defender/contracts';
import type { PipelineStore } from '../ports';
import type { TimeStoreCall } from './ports';

/**
 * `s` with its run-path reads and writes timed by `timed` (the seeds' store read / write histograms):
 * the chamber state's, the trace read, the monitor state's, the monitor model's and the chamber memory's;
 * the rest as it is.
 */
export function timedPipelineStore(s: PipelineStore, timed: TimeStoreCall): PipelineStore {
  return {
    chamberState: {
      get: timed('read', (c: ChamberRef) => s.chamberState.get(c)),
      claim: timed('write', (c: ChamberRef, e: number, o: string, n: Date) => s.chamberState.claim(c, e, o, n)),
      commitRun: timed('write', (i: Parameters<typeof s.chamberState.commitRun>[0]) => s.chamberState.commitRun(i)),
      appliedRun: timed('read', (c: ChamberRef, runId: string) => s.chamberState.appliedRun(c, runId)),
      bindStream: timed('write', (i: Parameters<typeof s.chamberState.bindStream>[0]) => s.chamberState.bindStream(i)),
    },
    traces: { ...s.traces, read: timed('read', (r: Parameters<typeof s.traces.read>[0]) => s.traces.read(r)) } as typeof s.traces,
    uchart: s.uchart,
    alarms: s.alarms,
    outbox: s.outbox,
    strategies: s.strategies,
    chamberMetadata: s.chamberMetadata,
    monitorState: {
      get: timed('read', (c: ChamberRef, recipe: string) => s.monitorState.get(c, recipe)),
      list: (c: ChamberRef) => s.monitorState.list(c),
    },
    monitorModels: {
      get: timed('read', (c: ChamberRef, recipe: string, version?: number) => s.monitorModels.get(c, recipe, version)),
      versions: (c: ChamberRef) => s.monitorModels.versions(c),
    },
    chamberMemory: { get: timed('read', (c: ChamberRef) => s.chamberMemory.get(c)) },
  };
}
