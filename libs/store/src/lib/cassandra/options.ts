import { readFileSync } from 'node:fs';
import { checkServerIdentity, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { types } from 'cassandra-driver';
import type { StoreObserver } from '../observer';

/** Consistency levels accepted for `CASSANDRA_CONSISTENCY`. */
export const CASSANDRA_CONSISTENCIES = ['QUORUM', 'LOCAL_QUORUM', 'EACH_QUORUM', 'ALL', 'ONE', 'LOCAL_ONE', 'TWO', 'THREE'] as const;
export type CassandraConsistencyName = (typeof CASSANDRA_CONSISTENCIES)[number];
export type CassandraSerialConsistencyName = 'SERIAL' | 'LOCAL_SERIAL';

/** Options of {@link CassandraStore.connect}. */
export interface CassandraStoreOptions {
  /** `host` or `host:port` entries (`CASSANDRA_HOSTS`). */
  readonly contactPoints: readonly string[];
  /** Data centre of the contact points (`CASSANDRA_LOCAL_DC`). */
  readonly localDataCenter: string;
  /** Keyspace (`CASSANDRA_KEYSPACE`), default `defense_system`: lower-case letters, digits, `_`, at most 48. */
  readonly keyspace?: string;
  /** Reads and writes (`CASSANDRA_CONSISTENCY`), default QUORUM. */
  readonly consistency?: CassandraConsistencyName;
  /** Paxos phase of lightweight transactions; default LOCAL_SERIAL with a LOCAL_* consistency, else SERIAL. */
  readonly serialConsistency?: CassandraSerialConsistencyName;
  readonly credentials?: { readonly username: string; readonly password: string };
  /** TLS from PEM files (`CASSANDRA_TLS_*`): read at connect, see {@link cassandraSslOptions}. */
  readonly tls?: CassandraTlsFiles;
  /** Raw TLS options for the driver, merged over those made from `tls`; certificates are verified unless `rejectUnauthorized: false` is given here. */
  readonly sslOptions?: ConnectionOptions;
  /** Create the keyspace when missing (default true; production keyspaces are usually made by operators). */
  readonly createKeyspace?: boolean;
  /** Replication of a created keyspace; default `{ class: 'SimpleStrategy', replication_factor: 1 }`. */
  readonly replication?: Readonly<Record<string, string | number>>;
  /** TTL of committed runs and alarms in seconds (bounds the chamber partition); default 90 days, 0 = keep forever. */
  readonly runRetentionSeconds?: number;
  /** TTL of run observations (weight inputs) in seconds; default 14 days. */
  readonly observationRetentionSeconds?: number;
  /** Per-request timeout in ms (default 12,000). */
  readonly requestTimeoutMs?: number;
  /** Trace chunk size in bytes (multiple of 8, <= 1 MiB; default 1 MiB). */
  readonly traceChunkBytes?: number;
  /** Trace chunk writes in flight (default 8). */
  readonly traceWriteConcurrency?: number;
  /** Parallel trace read queries (default 4). */
  readonly traceReadConcurrency?: number;
  /**
   * Requests in flight at most; more wait their turn (default 1,024: half of what the driver sends
   * on a host's one connection, 2,048, leaving room for its own prepares and pages).
   */
  readonly maxRequestsInFlight?: number;
  /** Bytes of free trace buffers kept for the next reads (default 32 MiB; 0: a buffer per trace). */
  readonly tracePoolBytes?: number;
  /** Name recorded when this process claims a schema migration (default host:pid). */
  readonly migrationOwner?: string;
  /** How long to wait for another process's migration before taking it over (default 120 s). */
  readonly migrationStaleAfterMs?: number;
  /** Receives every operation (durations for metrics). */
  readonly observer?: StoreObserver;
}

/**
 * Parses a consistency name (case-insensitive).
 * @throws Error naming the accepted values.
 */
export function parseCassandraConsistency(name: string): CassandraConsistencyName {
  const upper = name.trim().toUpperCase();
  if ((CASSANDRA_CONSISTENCIES as readonly string[]).includes(upper)) return upper as CassandraConsistencyName;
  throw new Error(`unknown Cassandra consistency "${name}" (expected one of ${CASSANDRA_CONSISTENCIES.join(', ')})`);
}

const CODES: Record<CassandraConsistencyName | CassandraSerialConsistencyName, number> = {
  QUORUM: types.consistencies.quorum,
  LOCAL_QUORUM: types.consistencies.localQuorum,
  EACH_QUORUM: types.consistencies.eachQuorum,
  ALL: types.consistencies.all,
  ONE: types.consistencies.one,
  LOCAL_ONE: types.consistencies.localOne,
  TWO: types.consistencies.two,
  THREE: types.consistencies.three,
  SERIAL: types.consistencies.serial,
  LOCAL_SERIAL: types.consistencies.localSerial,
};

/** The driver's code of a consistency name. */
export function consistencyCode(name: CassandraConsistencyName | CassandraSerialConsistencyName): number {
  return CODES[name];
}

/** Serial consistency that goes with `consistency` unless one is given. */
export function defaultSerialConsistency(consistency: CassandraConsistencyName): CassandraSerialConsistencyName {
  return consistency.startsWith('LOCAL_') ? 'LOCAL_SERIAL' : 'SERIAL';
}

export const KEYSPACE_PATTERN = /^[a-z][a-z0-9_]{0,47}$/;

/** PEM files and the name to check for TLS to Cassandra (`CASSANDRA_TLS_*`). */
export interface CassandraTlsFiles {
  /** CA the nodes' certificates must chain to (`CASSANDRA_TLS_CA_FILE`). */
  readonly caFile: string;
  /** Client certificate and key, both or neither (`CASSANDRA_TLS_CERT_FILE` / `_KEY_FILE`): for nodes that require client certificates. */
  readonly certFile?: string;
  readonly keyFile?: string;
  /**
   * Name every node's certificate must carry (`CASSANDRA_TLS_SERVER_NAME`), e.g. the cluster's
   * DNS name. Without it each node's certificate must name the address the driver connects to
   * (the driver connects to node IP addresses, also those it discovers).
   */
  readonly serverName?: string;
}

function readPem(what: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new Error(`Cassandra TLS: cannot read the ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
}

/**
 * The driver's `sslOptions` for `files`: the CA (only it is trusted), the client certificate and
 * key when given, certificate and host-name verification always on (the driver's own default
 * accepts any certificate).
 *
 * @throws Error naming the file that cannot be read, or a certificate without its key.
 */
export function cassandraSslOptions(files: CassandraTlsFiles): ConnectionOptions {
  if ((files.certFile === undefined) !== (files.keyFile === undefined)) {
    throw new Error(`Cassandra TLS: a client certificate needs its key (${files.certFile === undefined ? 'certFile' : 'keyFile'} is missing)`);
  }
  const serverName = files.serverName;
  return {
    ca: readPem('CA file', files.caFile),
    ...(files.certFile && files.keyFile ? { cert: readPem('client certificate', files.certFile), key: readPem('client key', files.keyFile) } : {}),
    rejectUnauthorized: true,
    ...(serverName ? { checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(serverName, cert) } : {}),
  };
}
