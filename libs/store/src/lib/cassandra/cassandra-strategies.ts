import {
  validatePositiveInt,
  validateStrategy,
  validateStrategyScopes,
  VersionConflictError,
  type PutVersionResult,
  type StrategyRecord,
  type StrategyRepository,
} from '@defender/contracts';
import { sameStrategy } from '../codec/compare';
import { JSON_SCHEMA_VERSION, storedInt, strategyFromRow } from '../codec/rows';
import { Session, getter } from './cassandra-session';

export class CassandraStrategies implements StrategyRepository {
  constructor(private readonly s: Session) {}

  put(st: StrategyRecord): Promise<PutVersionResult> {
    return this.s.op('strategies.put', 'write', async () => {
      validateStrategy(st);
      const r = await this.s.exec(
        `INSERT INTO ${this.s.ks}.strategies (scope, version, schema_version, document, created_at, author) VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
        [st.scope, st.version, JSON_SCHEMA_VERSION, JSON.stringify(st.document), st.createdAt, st.author],
      );
      if (r.wasApplied()) return 'created';
      const existing = strategyFromRow(st.scope, getter(r.first()), 'strategies');
      if (sameStrategy(existing, st)) return 'unchanged';
      throw new VersionConflictError({ scope: st.scope, version: st.version, table: 'strategies' });
    });
  }

  get(scope: string, version?: number): Promise<StrategyRecord | undefined> {
    return this.s.op('strategies.get', 'read', async () => {
      if (version !== undefined) validatePositiveInt('version', version);
      const row = (
        await this.s.exec(
          `SELECT version, schema_version, document, created_at, author FROM ${this.s.ks}.strategies WHERE scope = ?${version !== undefined ? ' AND version = ?' : ''} LIMIT 1`,
          [scope, ...(version !== undefined ? [version] : [])],
        )
      ).first();
      return row ? strategyFromRow(scope, getter(row), 'strategies') : undefined;
    });
  }

  versions(scope: string): Promise<number[]> {
    return this.s.op('strategies.versions', 'read', async () => {
      const rows = await this.s.all(`SELECT version FROM ${this.s.ks}.strategies WHERE scope = ?`, [scope]);
      return rows.map((r) => storedInt(r.get('version'), { scope, table: 'strategies' }, 'version', 1)).reverse();
    });
  }
  latest(scopes: readonly string[]): Promise<StrategyRecord[]> {
    return this.s.op('strategies.latest', 'read', async () => {
      validateStrategyScopes(scopes);
      // One query: a partition per scope, versions clustered newest first, so the first row of each
      // partition is its newest version. Rows come back in token order: put them in the given order.
      const rows = await this.s.all(
        `SELECT scope, version, schema_version, document, created_at, author FROM ${this.s.ks}.strategies WHERE scope IN ? PER PARTITION LIMIT 1`,
        [[...scopes]],
      );
      const byScope = new Map(rows.map((r) => [String(r.get('scope')), r]));
      return scopes.flatMap((scope) => {
        const row = byScope.get(scope);
        return row ? [strategyFromRow(scope, getter(row), 'strategies')] : [];
      });
    });
  }
}
