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
import { Conn, type SqlRow, getter } from './sqlite-conn';

export class SqliteStrategies implements StrategyRepository {
  constructor(private readonly c: Conn) {}

  put(st: StrategyRecord): Promise<PutVersionResult> {
    return this.c.op('strategies.put', 'write', () => {
      validateStrategy(st);
      return this.c.write((): PutVersionResult => {
        const row = this.c.sql('SELECT * FROM strategies WHERE scope = ? AND version = ?').get(st.scope, st.version) as SqlRow | undefined;
        if (row) {
          if (sameStrategy(strategyFromRow(st.scope, getter(row), 'strategies'), st)) return 'unchanged';
          throw new VersionConflictError({ scope: st.scope, version: st.version, table: 'strategies' });
        }
        this.c
          .sql('INSERT INTO strategies (scope, version, schema_version, document, created_at, author) VALUES (?, ?, ?, ?, ?, ?)')
          .run(st.scope, st.version, JSON_SCHEMA_VERSION, JSON.stringify(st.document), st.createdAt.getTime(), st.author);
        return 'created';
      });
    });
  }

  get(scope: string, version?: number): Promise<StrategyRecord | undefined> {
    return this.c.op('strategies.get', 'read', () => {
      if (version !== undefined) validatePositiveInt('version', version);
      const row = (
        version !== undefined
          ? this.c.sql('SELECT * FROM strategies WHERE scope = ? AND version = ?').get(scope, version)
          : this.c.sql('SELECT * FROM strategies WHERE scope = ? ORDER BY version DESC LIMIT 1').get(scope)
      ) as SqlRow | undefined;
      return row ? strategyFromRow(scope, getter(row), 'strategies') : undefined;
    });
  }

  versions(scope: string): Promise<number[]> {
    return this.c.op('strategies.versions', 'read', () =>
      (this.c.sql('SELECT version FROM strategies WHERE scope = ? ORDER BY version').all(scope) as SqlRow[]).map((r) =>
        storedInt(r['version'], { scope, table: 'strategies' }, 'version', 1),
      ),
    );
  }
  latest(scopes: readonly string[]): Promise<StrategyRecord[]> {
    return this.c.op('strategies.latest', 'read', () => {
      validateStrategyScopes(scopes);
      // One statement (one snapshot): the newest version of each scope, by the primary key.
      const rows = this.c
        .sql(
          `SELECT s.* FROM strategies s WHERE s.scope IN (${scopes.map(() => '?').join(', ')}) AND s.version = (SELECT MAX(version) FROM strategies WHERE scope = s.scope)`,
        )
        .all(...scopes) as SqlRow[];
      const byScope = new Map(rows.map((r) => [String(r['scope']), r]));
      return scopes.flatMap((scope) => {
        const row = byScope.get(scope);
        return row ? [strategyFromRow(scope, getter(row), 'strategies')] : [];
      });
    });
  }
}
