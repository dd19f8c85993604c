// The Cassandra store's session, the chamber_log row kinds and row helpers, shared by its repositories.
import { Client, type QueryOptions, type types } from 'cassandra-driver';
import { StoreClosedError, type ChamberRef } from '@defender/contracts';
import { type RowGetter } from '../codec/rows';
import { observed, type StoreObserver } from '../observer';
import { mapCassandraError } from './errors';
import { RequestGate } from './request-gate';

export const DAY = 86_400;
export const KIND_RUN = 0;
export const KIND_ALARM = 1;
/** A run id the chamber applied: seq 0, item = run id, applied_seq (kept as long as the chamber). */
export const KIND_APPLIED = 2;
/** An outbox event: seq = the run's, item = its index (zero-padded), subject, msg_id, body = payload. */
export const KIND_OUTBOX = 3;
/** Run rows indexed per batch when a claim indexes runs committed before migration 2. */
export const INDEX_BATCH = 200;
export const ITEM_SEPARATOR = '\u001f';
export const COMMIT_ATTEMPTS = 5;

export type Row = types.Row;

export function getter(row: Row): RowGetter {
  return (column) => {
    const v: unknown = row.get(column);
    return v === undefined ? null : v;
  };
}

export function chamberOf(ref: ChamberRef): ChamberRef {
  return { toolId: ref.toolId, chamberId: ref.chamberId };
}

/** Requests in flight at most by default (CassandraStoreOptions.maxRequestsInFlight). */
export const DEFAULT_MAX_REQUESTS_IN_FLIGHT = 1024;

/** The driver session plus what every repository needs: keyspace, consistency, instrumentation. */
export class Session {
  closed = false;
  readonly base: QueryOptions;
  readonly serialRead: QueryOptions;

  constructor(
    readonly client: Client,
    readonly ks: string,
    consistency: number,
    serialConsistency: number,
    private readonly observer: StoreObserver | undefined,
    private readonly gate: RequestGate,
  ) {
    this.base = { prepare: true, consistency, serialConsistency };
    this.serialRead = { prepare: true, consistency: serialConsistency };
  }

  op<T>(operation: string, kind: 'read' | 'write', fn: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return observed(this.observer, 'cassandra', operation, kind, fn, (err, op) => mapCassandraError(err, op, kind));
  }

  exec(query: string, params: unknown[], extra?: QueryOptions): Promise<types.ResultSet> {
    return this.gate.run(() => this.client.execute(query, params, { ...this.base, ...extra }));
  }

  batch(statements: Parameters<Client['batch']>[0], extra?: QueryOptions): Promise<types.ResultSet> {
    return this.gate.run(() => this.client.batch(statements, { ...this.base, ...extra }));
  }

  /** All rows of a query, fetched page by page. */
  async all(query: string, params: unknown[], fetchSize = 5000, extra?: QueryOptions): Promise<Row[]> {
    const rows: Row[] = [];
    let pageState: string | undefined;
    do {
      const rs = await this.exec(query, params, { ...extra, fetchSize, ...(pageState ? { pageState } : {}) });
      for (const r of rs.rows) rows.push(r);
      pageState = rs.pageState ?? undefined;
    } while (pageState);
    return rows;
  }
}

/** Clustering item of the `index`-th outbox event of a run: zero-padded, so items sort by index. */
export function outboxItem(index: number): string {
  return String(index).padStart(6, '0');
}
