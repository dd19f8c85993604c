import { type QueryOptions, type types } from 'cassandra-driver';
import {
  FencedError,
  InvalidRecordError,
  SequenceConflictError,
  StoreUnavailableError,
  validateChamberRef,
  validateBindStream,
  validateClaim,
  validateCommitRunInput,
  validatePositiveInt,
  validateRunRef,
  type AlarmRecord,
  type AlarmRepository,
  type BindStreamInput,
  type ChamberRef,
  type ChamberState,
  type ChamberStateRepository,
  type CommitRunInput,
  type CommitRunResult,
  type HoldRecord,
  type RunPointSet,
} from '@defender/contracts';
import { encodePointSet } from '../codec/point-set-codec';
import {
  alarmBody,
  alarmFromRow,
  holdFromJson,
  holdJson,
  JSON_SCHEMA_VERSION,
  runPointSetFromRow,
  stateFromRow,
  storedInt,
} from '../codec/rows';
import {
  Session,
  type Row,
  getter,
  chamberOf,
  KIND_RUN,
  KIND_ALARM,
  KIND_APPLIED,
  KIND_OUTBOX,
  INDEX_BATCH,
  ITEM_SEPARATOR,
  COMMIT_ATTEMPTS,
  outboxItem,
} from './cassandra-session';
import { chamberMemoryStatement } from './cassandra-chamber-memory';
import { monitorModelStatement } from './cassandra-monitor-model';
import { chamberEventStatements } from './cassandra-chamber-events';
import { monitorStateStatement } from './cassandra-monitor-state';

export class CassandraChamberLog implements ChamberStateRepository {
  private readonly t: string;

  constructor(
    private readonly s: Session,
    private readonly runTtl: number,
  ) {
    this.t = `${s.ks}.chamber_log`;
  }

  private async readState(chamber: ChamberRef): Promise<ChamberState | undefined> {
    const row = (
      await this.s.exec(
        `SELECT owner_epoch, hwm, owner_id, state_updated_at, stream_id, stream_offset FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`,
        [chamber.toolId, chamber.chamberId],
        this.s.serialRead,
      )
    ).first();
    if (!row || row.get('owner_epoch') === null) return undefined;
    return stateFromRow(chamber, getter(row), 'chamber_log');
  }

  /** Creates the static state row of a chamber seen for the first time (no-op when it exists). */
  private createState(chamber: ChamberRef, epoch: number, ownerId: string, now: Date): Promise<types.ResultSet> {
    return this.s.exec(
      `INSERT INTO ${this.t} (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, ?, 0, ?, ?) IF NOT EXISTS`,
      [chamber.toolId, chamber.chamberId, epoch, ownerId, now],
    );
  }

  get(chamber: ChamberRef): Promise<ChamberState | undefined> {
    return this.s.op('chamberState.get', 'read', async () => {
      validateChamberRef(chamber);
      return this.readState(chamberOf(chamber));
    });
  }

  claim(chamberIn: ChamberRef, epoch: number, ownerId: string, now: Date): Promise<ChamberState> {
    return this.s.op('chamberState.claim', 'write', async () => {
      validateClaim(chamberIn, epoch, ownerId, now);
      const chamber = chamberOf(chamberIn);
      for (let attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
        const r = await this.s.exec(
          `UPDATE ${this.t} SET owner_epoch = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ?`,
          [epoch, ownerId, now, chamber.toolId, chamber.chamberId, epoch],
        );
        if (r.wasApplied()) {
          // After our epoch is stored, only a newer owner can move the high-water mark: this read is safe to resume from.
          const state = await this.readState(chamber);
          if (!state) continue;
          await this.indexRuns(chamber, epoch, state.highWaterMark);
          return state;
        }
        const row = r.first();
        const stored: unknown = row?.get('owner_epoch');
        if (stored === null || stored === undefined) {
          if ((await this.createState(chamber, epoch, ownerId, now)).wasApplied()) {
            return { ...chamber, ownerEpoch: epoch, ownerId, highWaterMark: 0, updatedAt: now };
          }
          continue;
        }
        const storedEpoch = storedInt(stored, { chamber, table: 'chamber_log' }, 'owner_epoch');
        if (storedEpoch > epoch) {
          // The LWT answer carries only the columns of its condition; the owner's name comes from a read.
          const state = await this.readState(chamber);
          throw new FencedError(chamber, epoch, storedEpoch, state?.ownerId ?? null);
        }
      }
      throw new StoreUnavailableError(`chamber ${chamber.toolId}:${chamber.chamberId}: claim kept losing races`);
    });
  }

  bindStream(input: BindStreamInput): Promise<ChamberState> {
    return this.s.op('chamberState.bindStream', 'write', async () => {
      validateBindStream(input);
      const chamber = chamberOf(input.chamber);
      for (let attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
        const state = await this.readState(chamber);
        if (!state) throw new InvalidRecordError('bindStream', [{ path: 'chamber', message: 'the chamber was never claimed' }]);
        if (state.ownerEpoch > input.epoch) throw new FencedError(chamber, input.epoch, state.ownerEpoch, state.ownerId);
        if (state.streamId !== input.expectedStreamId) return state;
        const offset = input.rebase ? state.highWaterMark : (state.streamOffset ?? 0);
        // The mark is a condition too: the offset is the mark this update saw (only a newer owner,
        // fenced by the epoch condition, could move it meanwhile).
        const r = await this.s.exec(
          `UPDATE ${this.t} SET stream_id = ?, stream_offset = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ? AND hwm = ? AND stream_id = ?`,
          [input.streamId, offset, chamber.toolId, chamber.chamberId, input.epoch, state.highWaterMark, input.expectedStreamId ?? null],
        );
        if (r.wasApplied()) return { ...state, streamId: input.streamId, ...(offset > 0 ? { streamOffset: offset } : {}) };
      }
      throw new StoreUnavailableError(`chamber ${chamber.toolId}:${chamber.chamberId}: binding its stream kept losing races`);
    });
  }

  commitRun(input: CommitRunInput): Promise<CommitRunResult> {
    return this.s.op('chamberState.commitRun', 'write', async () => {
      validateCommitRunInput(input);
      const chamber = chamberOf(input.chamber);
      const pk = [chamber.toolId, chamber.chamberId];
      const at = input.committedAt;
      const update = input.hold
        ? {
            query: `UPDATE ${this.t} SET owner_epoch = ?, hwm = ?, run_index_hwm = ?, owner_id = ?, state_updated_at = ?, hold_id = ?, hold = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ? AND hwm < ?`,
            params: [
              input.epoch,
              input.sequence,
              input.sequence,
              input.ownerId,
              at,
              input.hold.holdId,
              holdJson(input.hold, input.sequence, input.runId, at),
              ...pk,
              input.epoch,
              input.sequence,
            ],
          }
        : {
            query: `UPDATE ${this.t} SET owner_epoch = ?, hwm = ?, run_index_hwm = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ? AND hwm < ?`,
            params: [input.epoch, input.sequence, input.sequence, input.ownerId, at, ...pk, input.epoch, input.sequence],
          };
      const insert = `INSERT INTO ${this.t} (tool_id, chamber_id, kind, seq, item, run_id, epoch, committed_at, recipe, schema_version, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?`;
      const statements = [
        update,
        {
          query: insert,
          params: [...pk, KIND_RUN, input.sequence, '', input.runId, input.epoch, at, input.recipe ?? null, 1, encodePointSet(input.points), this.runTtl],
        },
        ...(input.alarms ?? []).map((a) => ({
          query: insert,
          params: [
            ...pk,
            KIND_ALARM,
            input.sequence,
            `${a.ruleId}${ITEM_SEPARATOR}${a.indicatorKey}`,
            input.runId,
            input.epoch,
            at,
            a.recipe ?? input.recipe ?? null,
            JSON_SCHEMA_VERSION,
            Buffer.from(alarmBody(a), 'utf8'),
            this.runTtl,
          ],
        })),
        // The run id, once per chamber: a replay of any age finds it (the batch applies only if it is new).
        {
          query: `INSERT INTO ${this.t} (tool_id, chamber_id, kind, seq, item, applied_seq, epoch, committed_at) VALUES (?, ?, ?, 0, ?, ?, ?, ?) IF NOT EXISTS`,
          params: [...pk, KIND_APPLIED, input.runId, input.sequence, input.epoch, at],
        },
        ...(input.events ?? []).map((e, i) => ({
          query: `INSERT INTO ${this.t} (tool_id, chamber_id, kind, seq, item, subject, msg_id, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?`,
          params: [...pk, KIND_OUTBOX, input.sequence, outboxItem(i), e.subject, e.msgId, Buffer.from(e.payload, 'utf8'), this.runTtl],
        })),
        ...monitorStateStatement(this.s.ks, chamber, input),
        ...monitorModelStatement(this.s.ks, chamber, input),
        ...chamberEventStatements(this.s.ks, chamber, input),
        ...chamberMemoryStatement(this.s.ks, chamber, input),
      ];
      for (let attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
        // One partition, so the batch is a single Paxos round: all of it or nothing.
        const r = await this.s.batch(statements, { logged: true });
        if (r.wasApplied()) {
          return {
            outcome: 'applied',
            state: { ...chamber, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence, updatedAt: at },
          };
        }
        // Several conditions: the answer's rows are per condition, so decide from linearizable reads.
        const state = await this.readState(chamber);
        if (!state) {
          await this.createState(chamber, input.epoch, input.ownerId, at);
          continue;
        }
        if (state.ownerEpoch > input.epoch) throw new FencedError(chamber, input.epoch, state.ownerEpoch, state.ownerId);
        const appliedAt = await this.appliedSeq(chamber, input.runId, this.s.serialRead);
        if (appliedAt !== undefined) {
          if (appliedAt === input.sequence) return { outcome: 'already-applied', state };
          // Applied at another sequence (a re-published notification, of any age): only the mark moves.
          if (state.highWaterMark >= input.sequence) return { outcome: 'duplicate-run', state, appliedSequence: appliedAt };
          const moved = await this.s.exec(
            `UPDATE ${this.t} SET owner_epoch = ?, hwm = ?, run_index_hwm = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ? AND hwm < ?`,
            [input.epoch, input.sequence, input.sequence, input.ownerId, at, ...pk, input.epoch, input.sequence],
          );
          if (moved.wasApplied()) {
            return {
              outcome: 'duplicate-run',
              state: { ...chamber, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence, updatedAt: at },
              appliedSequence: appliedAt,
            };
          }
          continue;
        }
        if (state.highWaterMark >= input.sequence) {
          const existing = (
            await this.s.exec(`SELECT run_id FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = ?`, [...pk, KIND_RUN, input.sequence], this.s.serialRead)
          ).first();
          const storedRunId = (existing?.get('run_id') as string | null | undefined) ?? null;
          throw new SequenceConflictError(chamber, input.sequence, input.runId, storedRunId, state.highWaterMark);
        }
        // Lost a race with a concurrent change that still allows us; try again.
      }
      throw new StoreUnavailableError(`chamber ${chamber.toolId}:${chamber.chamberId}: commit kept losing races`, { outcomeUnknown: false });
    });
  }

  private async appliedSeq(chamber: ChamberRef, runId: string, extra?: QueryOptions): Promise<number | undefined> {
    const row = (
      await this.s.exec(
        `SELECT applied_seq FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = 0 AND item = ?`,
        [chamber.toolId, chamber.chamberId, KIND_APPLIED, runId],
        extra,
      )
    ).first();
    return row ? storedInt(row.get('applied_seq'), { chamber, runId, table: 'chamber_log' }, 'applied_seq', 1) : undefined;
  }

  appliedRun(chamber: ChamberRef, runId: string): Promise<number | undefined> {
    return this.s.op('chamberState.appliedRun', 'read', async () => {
      validateRunRef({ ...chamber, runId });
      return this.appliedSeq(chamberOf(chamber), runId);
    });
  }

  /**
   * Indexes the run ids of runs committed without one (before migration 2, or by an older release)
   * up to `hwm`, as the owner for `epoch`: kind 2 rows for the run rows above `run_index_hwm`, then
   * `run_index_hwm = hwm`, in batches fenced on the owner epoch. A no-op once the index is complete
   * (every commit keeps `run_index_hwm` at its sequence).
   */
  private async indexRuns(chamber: ChamberRef, epoch: number, hwm: number): Promise<void> {
    const pk = [chamber.toolId, chamber.chamberId];
    const head = (await this.s.exec(`SELECT run_index_hwm FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`, pk, this.s.serialRead)).first();
    const raw: unknown = head?.get('run_index_hwm');
    const from = raw === null || raw === undefined ? 0 : storedInt(raw, { chamber, table: 'chamber_log' }, 'run_index_hwm');
    if (from >= hwm) return;
    // Newest first (the clustering order); a run id stored at several sequences keeps its first one,
    // because the later (smaller-sequence) batches overwrite the earlier.
    const rows = await this.s.all(
      `SELECT seq, run_id, epoch, committed_at FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq > ? AND seq <= ?`,
      [...pk, KIND_RUN, from, hwm],
      1000,
    );
    for (let i = 0; i < rows.length; i += INDEX_BATCH) {
      const chunk = new Map<string, Row>();
      for (const r of rows.slice(i, i + INDEX_BATCH)) {
        const runId = r.get('run_id') as string | null;
        if (runId) chunk.set(runId, r);
      }
      const r = await this.s.batch(
        [
          // The condition every write to the partition carries; setting our own (claimed) epoch changes nothing.
          { query: `UPDATE ${this.t} SET owner_epoch = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ?`, params: [epoch, ...pk, epoch] },
          ...[...chunk].map(([runId, row]) => ({
            query: `INSERT INTO ${this.t} (tool_id, chamber_id, kind, seq, item, applied_seq, epoch, committed_at) VALUES (?, ?, ?, 0, ?, ?, ?, ?)`,
            params: [...pk, KIND_APPLIED, runId, row.get('seq'), row.get('epoch'), row.get('committed_at')],
          })),
        ],
        { logged: true },
      );
      if (!r.wasApplied()) return this.fencedBy(chamber, epoch);
    }
    const done = await this.s.exec(`UPDATE ${this.t} SET run_index_hwm = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ?`, [hwm, ...pk, epoch]);
    if (!done.wasApplied()) return this.fencedBy(chamber, epoch);
  }

  /** Throws the FencedError of a conditional write on the owner epoch that was not applied. */
  private async fencedBy(chamber: ChamberRef, epoch: number): Promise<never> {
    const state = await this.readState(chamber);
    throw new FencedError(chamber, epoch, state?.ownerEpoch ?? 0, state?.ownerId ?? null);
  }

}

/**
 * The alarms, the hold and the run point sets of a chamber's `chamber_log` partition: reads, and a
 * hold's release (the rows the state's commits write).
 */
export class CassandraChamberReads implements AlarmRepository {
  private readonly t: string;

  constructor(private readonly s: Session) {
    this.t = `${s.ks}.chamber_log`;
  }

  list(chamber: ChamberRef, options: { limit: number }): Promise<AlarmRecord[]> {
    return this.s.op('alarms.list', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const rows = await this.s.all(
        `SELECT seq, run_id, epoch, committed_at, schema_version, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? LIMIT ?`,
        [chamber.toolId, chamber.chamberId, KIND_ALARM, options.limit],
      );
      return rows.map((r) => alarmFromRow(chamberOf(chamber), getter(r), 'chamber_log'));
    });
  }

  ofRun(chamber: ChamberRef, sequence: number): Promise<AlarmRecord[]> {
    return this.s.op('alarms.ofRun', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('sequence', sequence);
      const rows = await this.s.all(
        `SELECT seq, run_id, epoch, committed_at, schema_version, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = ?`,
        [chamber.toolId, chamber.chamberId, KIND_ALARM, sequence],
      );
      return rows.map((r) => alarmFromRow(chamberOf(chamber), getter(r), 'chamber_log'));
    });
  }

  hold(chamber: ChamberRef): Promise<HoldRecord | null> {
    return this.s.op('alarms.hold', 'read', async () => {
      validateChamberRef(chamber);
      const row = (await this.s.exec(`SELECT hold FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`, [chamber.toolId, chamber.chamberId])).first();
      return holdFromJson(chamberOf(chamber), row?.get('hold') ?? null, 'chamber_log');
    });
  }

  releaseHold(chamber: ChamberRef, holdId: string): Promise<boolean> {
    return this.s.op('alarms.releaseHold', 'write', async () => {
      validateChamberRef(chamber);
      const r = await this.s.exec(`UPDATE ${this.t} SET hold_id = null, hold = null WHERE tool_id = ? AND chamber_id = ? IF hold_id = ?`, [
        chamber.toolId,
        chamber.chamberId,
        holdId,
      ]);
      return r.wasApplied();
    });
  }

  history(chamber: ChamberRef, options: { limit: number; beforeSequence?: number }): Promise<RunPointSet[]> {
    return this.s.op('uchart.history', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const before = options.beforeSequence;
      if (before !== undefined) validatePositiveInt('beforeSequence', before);
      const rows = await this.s.all(
        `SELECT seq, run_id, epoch, committed_at, recipe, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ?${before !== undefined ? ' AND seq < ?' : ''} LIMIT ?`,
        [chamber.toolId, chamber.chamberId, KIND_RUN, ...(before !== undefined ? [before] : []), options.limit],
        1000,
      );
      return rows.map((r) => runPointSetFromRow(chamberOf(chamber), getter(r), 'chamber_log')).reverse();
    });
  }

  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined> {
    return this.s.op('uchart.run', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('sequence', sequence);
      const row = (
        await this.s.exec(`SELECT seq, run_id, epoch, committed_at, recipe, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = ?`, [
          chamber.toolId,
          chamber.chamberId,
          KIND_RUN,
          sequence,
        ])
      ).first();
      return row ? runPointSetFromRow(chamberOf(chamber), getter(row), 'chamber_log') : undefined;
    });
  }
}
