import type { TraceBufferPoolStats } from '../codec/trace-buffer-pool';
import {
  CorruptRecordError,
  FencedError,
  InvalidRecordError,
  SequenceConflictError,
  StoreClosedError,
  StoreUnavailableError,
  TornTraceError,
  TraceNotFoundError,
  UnknownSchemaVersionError,
  VersionConflictError,
  type DefenderStore,
} from '@defender/contracts';
import { MigrationError } from '../migration-error';
import type { SqliteStoreOptions } from './sqlite-store';

/** The repositories of a {@link DefenderStore}, by property name. */
export type RepoName =
  'chamberMetadata' | 'traces' | 'uchart' | 'chamberState' | 'alarms' | 'outbox' | 'strategies' | 'monitorState' | 'monitorModels' | 'chamberMemory' | 'chamberEvents';

type OpKind = 'read' | 'write';

/**
 * Every repository method the store thread serves, with its kind (for the store observer). Typed
 * against the ports, so a method added to a repository fails to compile until it is listed here.
 */
export const THREAD_METHODS = {
  chamberMetadata: {
    upsert: 'write',
    get: 'read',
    list: 'read',
    recordObservation: 'write',
    recomputeWeights: 'write',
  },
  traces: { write: 'write', read: 'read', delete: 'write' },
  uchart: {
    history: 'read',
    run: 'read',
    putLimitSet: 'write',
    limitSet: 'read',
    currentLimitSets: 'read',
    limitSetHistory: 'read',
  },
  chamberState: { get: 'read', claim: 'write', commitRun: 'write', appliedRun: 'read', bindStream: 'write' },
  alarms: { list: 'read', ofRun: 'read', hold: 'read', releaseHold: 'write' },
  outbox: { pending: 'read', publishedThrough: 'read', markPublished: 'write' },
  strategies: { put: 'write', get: 'read', versions: 'read', latest: 'read' },
  monitorState: { get: 'read', list: 'read' },
  monitorModels: { get: 'read', versions: 'read' },
  chamberMemory: { get: 'read' },
  chamberEvents: { list: 'read' },
} as const satisfies { [R in RepoName]: { [M in keyof DefenderStore[R]]: OpKind } };

/**
 * Reads the thread answers with `LimitSetWire`s, their JSON columns still text, for the caller
 * to decode (`limitSetFromWire`): a limit set's `params` holds the chamber's monitor model, 40-130 KB
 * of JSON read by every run, and one parse on the caller's side costs less than the thread parsing
 * it and both sides copying the object graph across (structured clone). Same checks, same errors.
 */
export const WIRE_READS: ReadonlySet<string> = new Set(['uchart.limitSet', 'uchart.currentLimitSets', 'uchart.limitSetHistory']);

/** Marks the worker data of a store thread, so loading its entry anywhere else does nothing. */
export const STORE_THREAD_MARK = 'defender-sqlite-store-thread';

/** File name of the store thread's entry in an app bundle (next to main.js). */
export const STORE_THREAD_BUNDLE_FILE = 'sqlite-store-thread.js';

/** Options the thread opens its store with (everything but the observer, which stays on the caller's side). */
export type ThreadOpenOptions = Omit<SqliteStoreOptions, 'observer'>;

/** An error as it crosses the thread boundary: class name, message, stack, own fields and cause. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
  readonly fields: Record<string, unknown>;
  readonly cause?: WireError | { readonly value: unknown };
}

/** Caller -> thread. */
export type ToThread =
  | {
      readonly type: 'call';
      readonly id: number;
      readonly repo: RepoName;
      readonly method: string;
      readonly args: unknown[];
    }
  /** Trace buffers of released traces, moved back (transferred) into the thread's pool. */
  | { readonly type: 'return-buffers'; readonly buffers: ArrayBuffer[] }
  /** What the thread's trace buffer pool holds and has done. */
  | { readonly type: 'pool-stats'; readonly id: number }
  | { readonly type: 'close' };

/** Thread -> caller. */
export type FromThread =
  | { readonly type: 'ready'; readonly journalMode: string }
  | { readonly type: 'open-failed'; readonly error: WireError }
  | { readonly type: 'result'; readonly id: number; readonly value: unknown }
  | { readonly type: 'failed'; readonly id: number; readonly error: WireError }
  | { readonly type: 'pool-stats'; readonly id: number; readonly stats: TraceBufferPoolStats }
  | { readonly type: 'closed' };

/** Error classes rebuilt by name on the caller's side (anything else becomes a plain Error with the same name). */
const ERROR_CLASSES: Record<string, { prototype: Error }> = {
  StoreUnavailableError,
  FencedError,
  SequenceConflictError,
  VersionConflictError,
  InvalidRecordError,
  CorruptRecordError,
  UnknownSchemaVersionError,
  TornTraceError,
  TraceNotFoundError,
  StoreClosedError,
  MigrationError,
  TypeError,
  RangeError,
};

const MAX_CAUSE_DEPTH = 8;

/** Serialises an error with its own fields (e.g. a FencedError's epochs, a SqliteError's code) and its cause chain. */
export function toWireError(err: unknown, depth = 0): WireError {
  if (!(err instanceof Error))
    return { name: 'Error', message: `non-error thrown: ${String(err)}`, fields: {} };
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(err)) {
    if (key === 'cause') continue;
    const value = (err as unknown as Record<string, unknown>)[key];
    if (cloneable(value)) fields[key] = value;
  }
  const cause = (err as { cause?: unknown }).cause;
  const wire: WireError = { name: err.name, message: err.message, stack: err.stack, fields };
  if (cause === undefined) return wire;
  if (cause instanceof Error && depth < MAX_CAUSE_DEPTH)
    return { ...wire, cause: toWireError(cause, depth + 1) };
  return { ...wire, cause: { value: cloneable(cause) ? cause : String(cause) } };
}

/** Rebuilds a {@link toWireError} error as an instance of its class (same name, message, fields, cause). */
export function fromWireError(wire: WireError): Error {
  const proto = ERROR_CLASSES[wire.name]?.prototype ?? Error.prototype;
  const err = Object.create(proto) as Error;
  Object.defineProperty(err, 'message', { value: wire.message, writable: true, configurable: true });
  if (wire.stack !== undefined)
    Object.defineProperty(err, 'stack', { value: wire.stack, writable: true, configurable: true });
  Object.assign(err, wire.fields);
  if (err.name !== wire.name)
    Object.defineProperty(err, 'name', {
      value: wire.name,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  if (wire.cause !== undefined) {
    const cause = 'fields' in wire.cause ? fromWireError(wire.cause) : wire.cause.value;
    Object.defineProperty(err, 'cause', { value: cause, writable: true, configurable: true });
  }
  return err;
}

function cloneable(value: unknown): boolean {
  try {
    structuredClone(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * The sample buffers (under Float64Array / Float32Array views) in a value for which `take` says
 * yes, each once: trace memory the store thread built and hands over instead of copying. Node
 * Buffers are never candidates (small ones share a pool).
 */
export function sampleBuffers(value: unknown, take: (buffer: ArrayBuffer) => boolean): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  collectBuffers(value, out, take, 0);
  return [...out];
}

function collectBuffers(
  value: unknown,
  out: Set<ArrayBuffer>,
  take: (buffer: ArrayBuffer) => boolean,
  depth: number,
): void {
  if (depth > 6 || value === null || typeof value !== 'object') return;
  const tag = Object.prototype.toString.call(value);
  if (tag === '[object Float64Array]' || tag === '[object Float32Array]') {
    // (Tags, not instanceof: under jest the typed arrays and their buffers may come from two realms.)
    const buf = (value as Float64Array).buffer;
    if (
      Object.prototype.toString.call(buf) === '[object ArrayBuffer]' &&
      !out.has(buf as ArrayBuffer) &&
      take(buf as ArrayBuffer)
    )
      out.add(buf as ArrayBuffer);
    return;
  }
  if (ArrayBuffer.isView(value) || value instanceof Date || tag === '[object ArrayBuffer]') return;
  const children = value instanceof Map || Array.isArray(value) ? value.values() : Object.values(value);
  for (const child of children) collectBuffers(child, out, take, depth + 1);
}
