import {
  validateChamberRef,
  validateLimitSet,
  validatePositiveInt,
  VersionConflictError,
  type ChamberRef,
  type LimitSetRecord,
  type PutVersionResult,
  type RunPointSet,
  type UChartRepository,
} from '@defender/contracts';
import { sameLimitSet } from '../codec/compare';
import {
  JSON_SCHEMA_VERSION,
  limitBaselineJson,
  limitParamsJson,
  limitSetFromRow,
  limitSetFromWire,
  limitSetWireFromRow,
  type LimitSetWire,
} from '../codec/rows';
import { Conn, type SqlRow, getter, chamberOf } from './sqlite-conn';
import { SqliteChamberLog } from './sqlite-chamber-log';

export class SqliteUChart implements UChartRepository {
  constructor(
    private readonly c: Conn,
    private readonly log: SqliteChamberLog,
  ) {}

  history(chamber: ChamberRef, options: { limit: number; beforeSequence?: number }): Promise<RunPointSet[]> {
    return this.log.history(chamber, options);
  }

  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined> {
    return this.log.run(chamber, sequence);
  }

  putLimitSet(l: LimitSetRecord): Promise<PutVersionResult> {
    return this.c.op('uchart.putLimitSet', 'write', () => {
      validateLimitSet(l);
      return this.c.write((): PutVersionResult => {
        const row = this.c
          .sql('SELECT * FROM limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? AND version = ?')
          .get(l.toolId, l.chamberId, l.indicatorKey, l.version) as SqlRow | undefined;
        if (row) {
          if (sameLimitSet(limitSetFromRow(chamberOf(l), getter(row), 'limit_sets'), l)) return 'unchanged';
          throw new VersionConflictError({ chamber: chamberOf(l), indicatorKey: l.indicatorKey, version: l.version, table: 'limit_sets' });
        }
        this.c
          .sql(
            `INSERT INTO limit_sets (tool_id, chamber_id, indicator_key, version, schema_version, chart_type, center, sigma, lcl, ucl, params, baseline, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(l.toolId, l.chamberId, l.indicatorKey, l.version, JSON_SCHEMA_VERSION, l.chartType, l.center, l.sigma, l.lcl, l.ucl, limitParamsJson(l), limitBaselineJson(l), l.createdAt.getTime());
        return 'created';
      });
    });
  }

  limitSet(chamber: ChamberRef, indicatorKey: string, version?: number): Promise<LimitSetRecord | undefined> {
    return this.c.op('uchart.limitSet', 'read', () => {
      const w = this.limitSetWireNow(chamber, indicatorKey, version);
      return w && limitSetFromWire(w);
    });
  }

  currentLimitSets(chamber: ChamberRef): Promise<LimitSetRecord[]> {
    return this.c.op('uchart.currentLimitSets', 'read', () => this.currentLimitSetsWireNow(chamber).map(limitSetFromWire));
  }

  limitSetHistory(chamber: ChamberRef, indicatorKey: string): Promise<LimitSetRecord[]> {
    return this.c.op('uchart.limitSetHistory', 'read', () => this.limitSetHistoryWireNow(chamber, indicatorKey).map(limitSetFromWire));
  }

  /** The reads above with the JSON columns left as text (see {@link LimitSetWire}): what the store thread answers with. */
  readonly wire: LimitSetWireReads = {
    limitSet: (chamber, indicatorKey, version) => this.c.op('uchart.limitSet', 'read', () => this.limitSetWireNow(chamber, indicatorKey, version)),
    currentLimitSets: (chamber) => this.c.op('uchart.currentLimitSets', 'read', () => this.currentLimitSetsWireNow(chamber)),
    limitSetHistory: (chamber, indicatorKey) => this.c.op('uchart.limitSetHistory', 'read', () => this.limitSetHistoryWireNow(chamber, indicatorKey)),
  };

  private limitSetWireNow(chamber: ChamberRef, indicatorKey: string, version: number | undefined): LimitSetWire | undefined {
    validateChamberRef(chamber);
    if (version !== undefined) validatePositiveInt('version', version);
    const row = (
      version !== undefined
        ? this.c.sql('SELECT * FROM limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? AND version = ?').get(chamber.toolId, chamber.chamberId, indicatorKey, version)
        : this.c
            .sql('SELECT * FROM limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? ORDER BY version DESC LIMIT 1')
            .get(chamber.toolId, chamber.chamberId, indicatorKey)
    ) as SqlRow | undefined;
    return row ? limitSetWireFromRow(chamberOf(chamber), getter(row), 'limit_sets') : undefined;
  }

  private currentLimitSetsWireNow(chamber: ChamberRef): LimitSetWire[] {
    validateChamberRef(chamber);
    const rows = this.c
      .sql(
        `SELECT l.* FROM limit_sets l
         JOIN (SELECT indicator_key, MAX(version) AS version FROM limit_sets WHERE tool_id = ? AND chamber_id = ? GROUP BY indicator_key) m
           ON l.indicator_key = m.indicator_key AND l.version = m.version
         WHERE l.tool_id = ? AND l.chamber_id = ? ORDER BY l.indicator_key`,
      )
      .all(chamber.toolId, chamber.chamberId, chamber.toolId, chamber.chamberId) as SqlRow[];
    return rows.map((r) => limitSetWireFromRow(chamberOf(chamber), getter(r), 'limit_sets'));
  }

  private limitSetHistoryWireNow(chamber: ChamberRef, indicatorKey: string): LimitSetWire[] {
    validateChamberRef(chamber);
    const rows = this.c
      .sql('SELECT * FROM limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? ORDER BY version')
      .all(chamber.toolId, chamber.chamberId, indicatorKey) as SqlRow[];
    return rows.map((r) => limitSetWireFromRow(chamberOf(chamber), getter(r), 'limit_sets'));
  }
}

/**
 * The limit-set reads of {@link UChartRepository} answering {@link LimitSetWire}s (decode each with
 * `limitSetFromWire`): same validation, queries and errors, the JSON columns left to the caller.
 */
export interface LimitSetWireReads {
  limitSet(chamber: ChamberRef, indicatorKey: string, version?: number): Promise<LimitSetWire | undefined>;
  currentLimitSets(chamber: ChamberRef): Promise<LimitSetWire[]>;
  limitSetHistory(chamber: ChamberRef, indicatorKey: string): Promise<LimitSetWire[]>;
}
