import {
  validateChamberRef,
  validateMetadata,
  validateObservation,
  type ChamberMetadata,
  type ChamberMetadataRepository,
  type ChamberRef,
  type RunObservation,
  type WeightRecomputeSummary,
} from '@defender/contracts';
import { metadataFromRow } from '../codec/rows';
import { ObservationsByChamber, observedChamberOf, recomputeOptions, sameObservedMetadata } from '../weights/recompute';
import { Conn, type SqlRow, getter } from './sqlite-conn';

export class SqliteChamberMetadata implements ChamberMetadataRepository {
  constructor(
    private readonly c: Conn,
    private readonly observationRetentionSeconds: number,
  ) {}

  private insert(m: ChamberMetadata): void {
    this.c
      .sql(
        `INSERT OR REPLACE INTO chamber_metadata (tool_id, chamber_id, svid_count, collection_freq_hz, context_duration_seconds, weight, last_updated, source, observed_runs)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(m.toolId, m.chamberId, m.svidCount, m.collectionFreqHz, m.contextDurationSeconds, m.weight, m.lastUpdated.getTime(), m.source, m.observedRuns);
  }

  upsert(m: ChamberMetadata): Promise<void> {
    return this.c.op('chamberMetadata.upsert', 'write', () => {
      validateMetadata(m);
      this.insert(m);
    });
  }

  get(chamber: ChamberRef): Promise<ChamberMetadata | undefined> {
    return this.c.op('chamberMetadata.get', 'read', () => {
      validateChamberRef(chamber);
      const row = this.c.sql('SELECT * FROM chamber_metadata WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
      return row ? metadataFromRow(getter(row)) : undefined;
    });
  }

  list(): Promise<ChamberMetadata[]> {
    return this.c.op('chamberMetadata.list', 'read', () => (this.c.sql('SELECT * FROM chamber_metadata').all() as SqlRow[]).map((r) => metadataFromRow(getter(r))));
  }

  recordObservation(o: RunObservation): Promise<void> {
    return this.c.op('chamberMetadata.recordObservation', 'write', () => {
      validateObservation(o);
      this.c
        .sql(
          `INSERT OR REPLACE INTO run_observations (tool_id, chamber_id, observed_at, run_id, svid_count, collection_freq_hz, context_duration_seconds) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(o.toolId, o.chamberId, o.observedAt.getTime(), o.runId, o.svidCount, o.collectionFreqHz, o.contextDurationSeconds);
    });
  }

  recomputeWeights(now: Date, options?: { windowSeconds?: number; maxRunsPerChamber?: number }): Promise<WeightRecomputeSummary> {
    return this.c.op('chamberMetadata.recomputeWeights', 'write', () => {
      const { windowSeconds, maxRuns } = recomputeOptions(options);
      return this.c.write(() => {
        this.c.sql('DELETE FROM run_observations WHERE observed_at <= ?').run(now.getTime() - this.observationRetentionSeconds * 1000);
        const rows = this.c
          .sql(
            `SELECT * FROM run_observations WHERE observed_at > ? AND observed_at <= ? ORDER BY tool_id, chamber_id, observed_at DESC, run_id`,
          )
          .all(now.getTime() - windowSeconds * 1000, now.getTime()) as SqlRow[];
        const observations = new ObservationsByChamber(maxRuns);
        for (const r of rows) {
          const get = getter(r);
          observations.add(observedChamberOf(get), get);
        }
        let updated = 0;
        let unchanged = 0;
        for (const { metadata } of observations.metadata(now)) {
          const oldRow = this.c.sql('SELECT * FROM chamber_metadata WHERE tool_id = ? AND chamber_id = ?').get(metadata.toolId, metadata.chamberId) as SqlRow | undefined;
          if (sameObservedMetadata(oldRow ? metadataFromRow(getter(oldRow)) : undefined, metadata)) unchanged++;
          else updated++;
          this.insert(metadata);
        }
        return { updated, unchanged, observedChambers: observations.size };
      });
    });
  }
}
