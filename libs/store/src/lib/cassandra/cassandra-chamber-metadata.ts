import { type types } from 'cassandra-driver';
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
import { runPool } from '../pool';
import { ObservationsByChamber, observedChamberOf, recomputeOptions, sameObservedMetadata } from '../weights/recompute';
import { Session, getter } from './cassandra-session';

export class CassandraChamberMetadata implements ChamberMetadataRepository {
  private readonly cols =
    'tool_id, chamber_id, svid_count, collection_freq_hz, context_duration_seconds, weight, last_updated, source, observed_runs';

  constructor(
    private readonly s: Session,
    private readonly observationTtl: number,
  ) {}

  private insert(m: ChamberMetadata): Promise<types.ResultSet> {
    return this.s.exec(`INSERT INTO ${this.s.ks}.chamber_metadata (${this.cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      m.toolId,
      m.chamberId,
      m.svidCount,
      m.collectionFreqHz,
      m.contextDurationSeconds,
      m.weight,
      m.lastUpdated,
      m.source,
      m.observedRuns,
    ]);
  }

  upsert(m: ChamberMetadata): Promise<void> {
    return this.s.op('chamberMetadata.upsert', 'write', async () => {
      validateMetadata(m);
      await this.insert(m);
    });
  }

  get(chamber: ChamberRef): Promise<ChamberMetadata | undefined> {
    return this.s.op('chamberMetadata.get', 'read', async () => {
      validateChamberRef(chamber);
      const row = (await this.s.exec(`SELECT ${this.cols} FROM ${this.s.ks}.chamber_metadata WHERE tool_id = ? AND chamber_id = ?`, [chamber.toolId, chamber.chamberId])).first();
      return row ? metadataFromRow(getter(row)) : undefined;
    });
  }

  list(): Promise<ChamberMetadata[]> {
    return this.s.op('chamberMetadata.list', 'read', async () => {
      const rows = await this.s.all(`SELECT ${this.cols} FROM ${this.s.ks}.chamber_metadata`, []);
      return rows.map((r) => metadataFromRow(getter(r)));
    });
  }

  recordObservation(o: RunObservation): Promise<void> {
    return this.s.op('chamberMetadata.recordObservation', 'write', async () => {
      validateObservation(o);
      await this.s.exec(
        `INSERT INTO ${this.s.ks}.run_observations (tool_id, chamber_id, observed_at, run_id, svid_count, collection_freq_hz, context_duration_seconds) VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?`,
        [o.toolId, o.chamberId, o.observedAt, o.runId, o.svidCount, o.collectionFreqHz, o.contextDurationSeconds, this.observationTtl],
      );
    });
  }

  recomputeWeights(now: Date, options?: { windowSeconds?: number; maxRunsPerChamber?: number }): Promise<WeightRecomputeSummary> {
    return this.s.op('chamberMetadata.recomputeWeights', 'write', async () => {
      const { windowSeconds, maxRuns } = recomputeOptions(options);
      const from = now.getTime() - windowSeconds * 1000;
      // Newest maxRuns rows of every chamber (clustering order is observed_at DESC).
      const rows = await this.s.all(
        `SELECT tool_id, chamber_id, observed_at, run_id, svid_count, collection_freq_hz, context_duration_seconds FROM ${this.s.ks}.run_observations PER PARTITION LIMIT ?`,
        [maxRuns],
      );
      const observations = new ObservationsByChamber();
      for (const r of rows) {
        const get = getter(r);
        const chamber = observedChamberOf(get);
        const observedAt = ObservationsByChamber.observedAt(chamber, get);
        if (observedAt.getTime() <= from || observedAt.getTime() > now.getTime()) continue;
        observations.add(chamber, get, observedAt);
      }
      const existing = new Map<string, ChamberMetadata>();
      for (const r of await this.s.all(`SELECT ${this.cols} FROM ${this.s.ks}.chamber_metadata`, [])) {
        const m = metadataFromRow(getter(r));
        existing.set(`${m.toolId}:${m.chamberId}`, m);
      }
      let updated = 0;
      let unchanged = 0;
      await runPool([...observations.metadata(now)], 16, async ({ key, metadata }) => {
        if (sameObservedMetadata(existing.get(key), metadata)) unchanged++;
        else updated++;
        await this.insert(metadata);
      });
      return { updated, unchanged, observedChambers: observations.size };
    });
  }
}
