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
import { JSON_SCHEMA_VERSION, limitBaselineJson, limitParamsJson, limitSetFromRow } from '../codec/rows';
import { Session, getter, chamberOf } from './cassandra-session';
import type { CassandraChamberReads } from './cassandra-chamber-log';

export class CassandraUChart implements UChartRepository {
  private readonly cols = 'indicator_key, version, schema_version, chart_type, center, sigma, lcl, ucl, params, baseline, created_at';

  constructor(
    private readonly s: Session,
    private readonly log: CassandraChamberReads,
  ) {}

  history(chamber: ChamberRef, options: { limit: number; beforeSequence?: number }): Promise<RunPointSet[]> {
    return this.log.history(chamber, options);
  }

  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined> {
    return this.log.run(chamber, sequence);
  }

  putLimitSet(l: LimitSetRecord): Promise<PutVersionResult> {
    return this.s.op('uchart.putLimitSet', 'write', async () => {
      validateLimitSet(l);
      const r = await this.s.exec(
        `INSERT INTO ${this.s.ks}.limit_sets (tool_id, chamber_id, ${this.cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
        [l.toolId, l.chamberId, l.indicatorKey, l.version, JSON_SCHEMA_VERSION, l.chartType, l.center, l.sigma, l.lcl, l.ucl, limitParamsJson(l), limitBaselineJson(l), l.createdAt],
      );
      if (r.wasApplied()) return 'created';
      const row = r.first();
      const existing = limitSetFromRow(chamberOf(l), getter(row), 'limit_sets');
      if (sameLimitSet(existing, l)) return 'unchanged';
      throw new VersionConflictError({ chamber: chamberOf(l), indicatorKey: l.indicatorKey, version: l.version, table: 'limit_sets' });
    });
  }

  limitSet(chamber: ChamberRef, indicatorKey: string, version?: number): Promise<LimitSetRecord | undefined> {
    return this.s.op('uchart.limitSet', 'read', async () => {
      validateChamberRef(chamber);
      if (version !== undefined) validatePositiveInt('version', version);
      const row = (
        await this.s.exec(
          `SELECT ${this.cols} FROM ${this.s.ks}.limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ?${version !== undefined ? ' AND version = ?' : ''} LIMIT 1`,
          [chamber.toolId, chamber.chamberId, indicatorKey, ...(version !== undefined ? [version] : [])],
        )
      ).first();
      return row ? limitSetFromRow(chamberOf(chamber), getter(row), 'limit_sets') : undefined;
    });
  }

  currentLimitSets(chamber: ChamberRef): Promise<LimitSetRecord[]> {
    return this.s.op('uchart.currentLimitSets', 'read', async () => {
      validateChamberRef(chamber);
      // Rows come as (indicator ASC, version DESC): the first row of each indicator is its current version.
      const rows = await this.s.all(`SELECT ${this.cols} FROM ${this.s.ks}.limit_sets WHERE tool_id = ? AND chamber_id = ?`, [chamber.toolId, chamber.chamberId]);
      const out: LimitSetRecord[] = [];
      let last: string | undefined;
      for (const r of rows) {
        const key = r.get('indicator_key') as string;
        if (key === last) continue;
        last = key;
        out.push(limitSetFromRow(chamberOf(chamber), getter(r), 'limit_sets'));
      }
      return out;
    });
  }

  limitSetHistory(chamber: ChamberRef, indicatorKey: string): Promise<LimitSetRecord[]> {
    return this.s.op('uchart.limitSetHistory', 'read', async () => {
      validateChamberRef(chamber);
      const rows = await this.s.all(`SELECT ${this.cols} FROM ${this.s.ks}.limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ?`, [
        chamber.toolId,
        chamber.chamberId,
        indicatorKey,
      ]);
      return rows.map((r) => limitSetFromRow(chamberOf(chamber), getter(r), 'limit_sets')).reverse();
    });
  }
}
