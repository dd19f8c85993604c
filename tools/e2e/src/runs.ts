import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream } from '@nats-io/jetstream';
import type { RunNotification, TraceRecord } from '@defender/contracts';
import { notificationSubject } from '@defender/contracts';
import type { SqliteStore } from '@defender/store';
import Database from 'better-sqlite3';
import { gauss, rng } from '@defender/infra-harness';

export interface RunSpec {
  toolId: string;
  chamberId: string;
  runId: string;
  svids: string[];
  /** Samples per SVID. */
  samples: number;
  freqHz?: number;
  /** Added to every sample of every SVID (an excursion). */
  shift?: number;
  /** Fraction of samples replaced by NaN. */
  nanFraction?: number;
  /** Fraction of samples replaced by +Infinity or -Infinity (half each). */
  infFraction?: number;
  seed: number;
  /** Start of the context, epoch ms. */
  startMs?: number;
}

/** A run's trace: per SVID level 100 + 10 x index, noise sd 1 (+ shift), optional NaNs or ±Infinity. */
export function makeTrace(spec: RunSpec): TraceRecord {
  const u = rng(spec.seed);
  const svids = new Map<string, Float64Array>();
  spec.svids.forEach((name, i) => {
    const a = new Float64Array(spec.samples);
    for (let k = 0; k < a.length; k++) {
      const r = u();
      a[k] =
        spec.nanFraction && r < spec.nanFraction
          ? NaN
          : spec.infFraction && r < spec.infFraction
            ? r < spec.infFraction / 2
              ? Infinity
              : -Infinity
            : 100 + 10 * i + (spec.shift ?? 0) + gauss(u);
    }
    svids.set(name, a);
  });
  return {
    toolId: spec.toolId,
    chamberId: spec.chamberId,
    runId: spec.runId,
    timing: { kind: 'regular', startSeconds: (spec.startMs ?? Date.UTC(2026, 10, 25)) / 1000, frequencyHz: spec.freqHz ?? 1 },
    svids,
    steps: [],
    recipe: 'ETCH-A',
  };
}

export function notificationOf(spec: RunSpec, over: Partial<RunNotification> = {}): RunNotification {
  const start = spec.startMs ?? Date.UTC(2026, 10, 25);
  const end = start + (spec.samples / (spec.freqHz ?? 1)) * 1000;
  return {
    schema: 1,
    toolId: spec.toolId,
    chamberId: spec.chamberId,
    runId: spec.runId,
    recipe: 'ETCH-A',
    contextWindow: { start: new Date(start).toISOString(), end: new Date(end).toISOString() },
    svids: spec.svids,
    trace: { store: 'default', samples: spec.samples },
    completedAt: new Date(end).toISOString(),
    ...over,
  };
}

/** Writes the trace to the store, then publishes the completion notification; returns its stream sequence. */
export async function completeRun(store: Pick<SqliteStore, 'traces'>, nc: NatsConnection, spec: RunSpec): Promise<number> {
  await store.traces.write(makeTrace(spec));
  return publishRaw(nc, notificationSubject(spec.toolId, spec.chamberId), JSON.stringify(notificationOf(spec)));
}

/**
 * Like {@link completeRun}, but the trace's first chunk is overwritten with other bytes of the same
 * length after the write (a damaged disk or a bad copy), directly in the SQLite file: the chunk fails
 * its checksum when read.
 */
export async function completeRunWithCorruptChunk(sqlitePath: string, store: Pick<SqliteStore, 'traces'>, nc: NatsConnection, spec: RunSpec): Promise<number> {
  await store.traces.write(makeTrace(spec));
  const db = new Database(sqlitePath);
  try {
    db.pragma('busy_timeout = 10000');
    const row = db
      .prepare('SELECT rowid AS id, data FROM trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ? ORDER BY series_kind, series, chunk LIMIT 1')
      .get(spec.toolId, spec.chamberId, spec.runId) as { id: number; data: Buffer } | undefined;
    if (!row) throw new Error(`no trace chunk of ${spec.runId} to corrupt`);
    const damaged = Buffer.from(row.data);
    for (let i = 0; i < damaged.length; i += 7) damaged[i] = (damaged[i] ?? 0) ^ 0xa5;
    db.prepare('UPDATE trace_chunks SET data = ? WHERE rowid = ?').run(damaged, row.id);
  } finally {
    db.close();
  }
  return publishRaw(nc, notificationSubject(spec.toolId, spec.chamberId), JSON.stringify(notificationOf(spec)));
}

/** Publishes any payload on a notification subject (for bad-input tests). */
export async function publishRaw(nc: NatsConnection, subject: string, payload: string): Promise<number> {
  const ack = await jetstream(nc).publish(subject, payload);
  return ack.seq;
}
