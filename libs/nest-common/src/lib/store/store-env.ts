import { z } from 'zod';
import { CASSANDRA_CONSISTENCIES, StoreConfig } from '@defender/store';
import { env } from '../config/env-fields';

/** Store selection and connection settings shared by the apps (names from the seeds where they exist). */
export function storeEnvShape() {
  return {
    /** `sqlite` (embedded default, one machine) or `cassandra` (production). */
    STORE_BACKEND: z.enum(['sqlite', 'cassandra'], { message: 'must be sqlite or cassandra' }).default('sqlite'),
    /** SQLite database file (WAL mode); shared by the processes of one machine. */
    SQLITE_PATH: env.optionalString().default('./data/defender.db'),
    /** Comma-separated `host` or `host:port`. */
    CASSANDRA_HOSTS: z
      .string()
      .default('127.0.0.1')
      .transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s.length > 0))
      .pipe(z.array(z.string().regex(/^[^\s:,]+(:\d{1,5})?$/, 'each entry must be host or host:port')).min(1, 'must name at least one host')),
    CASSANDRA_LOCAL_DC: env.optionalString().default('datacenter1'),
    CASSANDRA_KEYSPACE: z.string().regex(/^[a-z][a-z0-9_]{0,47}$/, 'must be lower-case letters, digits and _ (<= 48)').default('defense_system'),
    CASSANDRA_CONSISTENCY: z
      .string()
      .default('QUORUM')
      .transform((v) => v.trim().toUpperCase())
      .pipe(z.enum(CASSANDRA_CONSISTENCIES, { message: `must be one of ${CASSANDRA_CONSISTENCIES.join(', ')}` })),
    CASSANDRA_USERNAME: env.optionalString(),
    CASSANDRA_PASSWORD: env.optionalString(),
    /** PEM CA the nodes' certificates must chain to: connect over TLS (certificates and names verified). */
    CASSANDRA_TLS_CA_FILE: env.readableFile(),
    /** PEM client certificate and key (both or neither), for nodes that require client certificates; need the CA. */
    CASSANDRA_TLS_CERT_FILE: env.readableFile(),
    CASSANDRA_TLS_KEY_FILE: env.readableFile(),
    /** Name every node's certificate must carry (e.g. the cluster's DNS name); default: the node's address. */
    CASSANDRA_TLS_SERVER_NAME: z
      .string()
      .regex(/^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/, 'must be a host name (the name in the nodes\' certificates)')
      .optional(),
    /** Replication factor of the keyspace when this process creates it (SimpleStrategy). */
    CASSANDRA_REPLICATION_FACTOR: env.int(1, 1, 9),
  };
}

export interface StoreEnv {
  STORE_BACKEND: 'sqlite' | 'cassandra';
  SQLITE_PATH: string;
  CASSANDRA_HOSTS: string[];
  CASSANDRA_LOCAL_DC: string;
  CASSANDRA_KEYSPACE: string;
  CASSANDRA_CONSISTENCY: (typeof CASSANDRA_CONSISTENCIES)[number];
  CASSANDRA_USERNAME?: string;
  CASSANDRA_PASSWORD?: string;
  CASSANDRA_TLS_CA_FILE?: string;
  CASSANDRA_TLS_CERT_FILE?: string;
  CASSANDRA_TLS_KEY_FILE?: string;
  CASSANDRA_TLS_SERVER_NAME?: string;
  CASSANDRA_REPLICATION_FACTOR: number;
}

/** Settings an app gives its store beside the shared variables. */
export interface StoreTuning {
  /** Bytes of free trace buffers the store keeps for the next reads (the defender: its trace budget). */
  readonly tracePoolBytes?: number;
}

/** The adapter configuration for validated store variables. */
export function storeConfigFromEnv(e: StoreEnv, owner: string, tuning: StoreTuning = {}): StoreConfig {
  const pool = tuning.tracePoolBytes !== undefined ? { tracePoolBytes: tuning.tracePoolBytes } : {};
  if (e.STORE_BACKEND === 'sqlite') return { kind: 'sqlite', sqlite: { filename: e.SQLITE_PATH, ...pool } };
  return {
    kind: 'cassandra',
    cassandra: {
      ...pool,
      contactPoints: e.CASSANDRA_HOSTS,
      localDataCenter: e.CASSANDRA_LOCAL_DC,
      keyspace: e.CASSANDRA_KEYSPACE,
      consistency: e.CASSANDRA_CONSISTENCY,
      replication: { class: 'SimpleStrategy', replication_factor: e.CASSANDRA_REPLICATION_FACTOR },
      migrationOwner: owner,
      ...(e.CASSANDRA_USERNAME && e.CASSANDRA_PASSWORD
        ? { credentials: { username: e.CASSANDRA_USERNAME, password: e.CASSANDRA_PASSWORD } }
        : {}),
      ...(e.CASSANDRA_TLS_CA_FILE
        ? {
            tls: {
              caFile: e.CASSANDRA_TLS_CA_FILE,
              ...(e.CASSANDRA_TLS_CERT_FILE ? { certFile: e.CASSANDRA_TLS_CERT_FILE } : {}),
              ...(e.CASSANDRA_TLS_KEY_FILE ? { keyFile: e.CASSANDRA_TLS_KEY_FILE } : {}),
              ...(e.CASSANDRA_TLS_SERVER_NAME ? { serverName: e.CASSANDRA_TLS_SERVER_NAME } : {}),
            },
          }
        : {}),
    },
  };
}
