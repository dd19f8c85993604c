import { RevisionConflictError } from './errors';
import { LeaseRecord, LeaseSnapshot } from './lease';

/** A running watch; `stop` ends it. */
export interface WatchHandle {
  stop(): void;
  /** Resolves when the watch ended (stopped, or lost its subscription: the caller re-opens it). */
  readonly closed: Promise<void>;
}

/**
 * Where election records live. Every write is a compare-and-set: `create` only when the key was
 * never written, `update` only when the key is still at `revision`.
 */
export interface LeaseStore {
  /**
   * The record and its revision.
   * @throws LeaseStoreUnavailableError when the store cannot answer.
   * @throws CorruptLeaseRecordError when the stored value does not parse.
   */
  get(election: string): Promise<LeaseSnapshot>;
  /**
   * Writes the first record of a key never written before; returns the new revision.
   * @throws RevisionConflictError when the key exists.
   */
  create(election: string, record: LeaseRecord): Promise<number>;
  /**
   * Replaces the record at `revision` (also a delete marker's revision); returns the new revision.
   * @throws RevisionConflictError when the key has moved past `revision`.
   */
  update(election: string, record: LeaseRecord, revision: number): Promise<number>;
  /**
   * Calls `onChange` with each new snapshot of `election` written after the watch started.
   * Best effort: a caller that must not miss a change re-reads with {@link get} periodically.
   */
  watch(election: string, onChange: (snapshot: LeaseSnapshot) => void): Promise<WatchHandle>;
}

/**
 * A {@link LeaseStore} in memory with the same compare-and-set rules as the KV store (revisions are
 * one sequence across all keys, like a JetStream stream). For unit tests and simulations.
 */
export class InMemoryLeaseStore implements LeaseStore {
  private readonly entries = new Map<string, LeaseSnapshot>();
  private readonly watchers = new Map<string, Set<(s: LeaseSnapshot) => void>>();
  private sequence = 0;
  /** Set to make every call fail with this error (an outage). */
  failWith: Error | undefined;

  async get(election: string): Promise<LeaseSnapshot> {
    this.check();
    return this.entries.get(election) ?? { record: null, revision: 0 };
  }

  async create(election: string, record: LeaseRecord): Promise<number> {
    this.check();
    if (this.entries.has(election)) throw new RevisionConflictError(election, 0);
    return this.write(election, record);
  }

  async update(election: string, record: LeaseRecord, revision: number): Promise<number> {
    this.check();
    const current = this.entries.get(election);
    if (current === undefined || current.revision !== revision)
      throw new RevisionConflictError(election, revision);
    return this.write(election, record);
  }

  /** Forgets every key and restarts revisions at 1, as a bucket NATS lost and created again would. */
  wipe(): void {
    this.entries.clear();
    this.sequence = 0;
  }

  /** Replaces the key with a delete marker, as `nats kv del` would. */
  delete(election: string): number {
    this.sequence += 1;
    this.entries.set(election, { record: null, revision: this.sequence });
    return this.sequence;
  }

  async watch(election: string, onChange: (snapshot: LeaseSnapshot) => void): Promise<WatchHandle> {
    this.check();
    const set = this.watchers.get(election) ?? new Set();
    this.watchers.set(election, set);
    set.add(onChange);
    let resolveClosed!: () => void;
    const closed = new Promise<void>((r) => (resolveClosed = r));
    return {
      stop: () => {
        set.delete(onChange);
        resolveClosed();
      },
      closed,
    };
  }

  private write(election: string, record: LeaseRecord): number {
    this.sequence += 1;
    const snapshot = { record: { ...record }, revision: this.sequence };
    this.entries.set(election, snapshot);
    for (const w of this.watchers.get(election) ?? []) w(snapshot);
    return this.sequence;
  }

  private check(): void {
    if (this.failWith) throw this.failWith;
  }
}
