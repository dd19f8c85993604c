import { randomBytes } from 'node:crypto';
import type {
  AlarmInput,
  ChamberRef,
  CommitRunInput,
  LimitSetRecord,
  OutboxEventInput,
  SampleArray,
  TraceRecord,
  UChartPoint,
} from '@defender/contracts';

/** A chamber no other test uses (tests of one store share its database). */
export function freshChamber(label = 'C'): ChamberRef {
  return { toolId: `tool-${randomBytes(4).toString('hex')}`, chamberId: `${label}${randomBytes(2).toString('hex')}` };
}

/** Deterministic xorshift32 in [0, 1). */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** `count` points with every optional field used on some of them. */
export function points(count: number, seed = 1): UChartPoint[] {
  const r = rng(seed);
  return Array.from({ length: count }, (_, i): UChartPoint => {
    const base = { indicatorKey: `recipe-A|step:${i % 3}|svid-${i}|mean`, value: 100 * r() - 50, flags: i % 4 === 0 ? 0xffffffff : i };
    if (i % 3 === 1) return { ...base, size: Math.round(r() * 100), limitsVersion: 1 + (i % 5) };
    if (i % 3 === 2) return { ...base, limitsVersion: 2, chart: { ewma: r(), cusumHigh: r() * 3, cusumLow: -r() } };
    return base;
  });
}

export function alarm(ruleId: string, indicatorKey: string, over: Partial<AlarmInput> = {}): AlarmInput {
  return {
    ruleId,
    indicatorKey,
    action: 'ALARM',
    value: 12.5,
    lcl: 7,
    ucl: 12,
    center: 9.5,
    recipe: 'recipe-A',
    step: 'main',
    svid: 'svid-1',
    statistic: 'mean',
    message: `${ruleId} fired on ${indicatorKey}`,
    details: { window: { kind: 'step', name: 'main' }, lastValues: [9.1, 12.5] },
    ...over,
  };
}

export function commit(chamber: ChamberRef, epoch: number, sequence: number, over: Partial<CommitRunInput> = {}): CommitRunInput {
  return {
    chamber,
    epoch,
    ownerId: `defender-${epoch}`,
    sequence,
    runId: `run-${sequence}`,
    recipe: 'recipe-A',
    committedAt: new Date(1_700_000_000_000 + sequence * 1000),
    points: points(3, sequence),
    ...over,
  };
}

/** The `index`-th outbox event of the run at `sequence` (an alarm unless `kind` says otherwise). */
export function event(chamber: ChamberRef, sequence: number, index: number, kind: 'defense.alarms' | 'defense.holds' = 'defense.alarms'): OutboxEventInput {
  return {
    subject: `${kind}.${chamber.toolId}.${chamber.chamberId}`,
    msgId: `${kind === 'defense.holds' ? 'hold' : 'alarm'}:${chamber.toolId}:${chamber.chamberId}:run-${sequence}:${index}`,
    payload: JSON.stringify({ runId: `run-${sequence}`, index, note: 'ünïcode and "quotes"' }),
  };
}

export function limitSet(chamber: ChamberRef, indicatorKey: string, version: number, over: Partial<LimitSetRecord> = {}): LimitSetRecord {
  return {
    ...chamber,
    indicatorKey,
    version,
    chartType: 'individuals',
    center: 10 + version,
    sigma: 0.5,
    lcl: 8.5 + version,
    ucl: 11.5 + version,
    params: { nSigma: 3, sigmaMethod: 'moving-range', mrBar: 0.564 },
    baseline: { reason: version === 1 ? 'initial' : 'maintenance', runIds: ['r1', 'r2', 'r3'], excludedRunIds: ['r2'] },
    createdAt: new Date(1_700_000_000_000 + version),
    ...over,
  };
}

/** A trace with `svids` SVIDs of `samples` samples (alternating f64/f32 unless `dtype` is given), NaN gaps included. */
export function trace(
  chamber: ChamberRef,
  runId: string,
  svids: number,
  samples: number,
  opts: { dtype?: 'f64' | 'f32'; explicit?: boolean; seed?: number } = {},
): TraceRecord {
  const r = rng(opts.seed ?? 42);
  const map = new Map<string, SampleArray>();
  for (let j = 0; j < svids; j++) {
    const f64 = opts.dtype ? opts.dtype === 'f64' : j % 2 === 0;
    const a = f64 ? new Float64Array(samples) : new Float32Array(samples);
    for (let i = 0; i < samples; i++) a[i] = i % 97 === 13 ? NaN : 100 * (j + 1) + 1e-3 * i + (r() - 0.5);
    map.set(`svid-${String(j).padStart(3, '0')}-${j % 2 === 0 ? 'pressure' : 'temp'}`, a);
  }
  const timing: TraceRecord['timing'] = opts.explicit
    ? { kind: 'explicit', timesSeconds: Float64Array.from({ length: samples }, (_, i) => 1000 + i * 0.25 + (i % 7 === 0 ? 0.01 : 0)) }
    : { kind: 'regular', startSeconds: 12.5, frequencyHz: 10 };
  const steps = samples >= 4 ? [
    { name: 'stabilize', startIndex: 0 },
    { name: 'main', startIndex: Math.floor(samples / 4) },
    { name: 'purge', startIndex: Math.floor((3 * samples) / 4) },
  ] : [];
  return { ...chamber, runId, timing, svids: map, steps, recipe: 'recipe-A' };
}

/** Raw bytes of a sample array (compares NaN payloads and -0 exactly). */
export function bytesOf(a: SampleArray | Float64Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The error `p` rejects with. @throws when it resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to reject');
}
