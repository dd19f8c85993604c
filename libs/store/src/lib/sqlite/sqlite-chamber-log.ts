import {
  FencedError,
  InvalidRecordError,
  SequenceConflictError,
  validateBindStream,
  validateChamberRef,
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
import { writeChamberMemory } from './sqlite-chamber-memory';
import { writeMonitorModel } from './sqlite-monitor-model';
import { writeChamberEvent } from './sqlite-chamber-events';
import { writeMonitorState } from './sqlite-monitor-state';
import { Conn, type SqlRow, getter, chamberOf } from './sqlite-conn';

export class SqliteChamberLog implements ChamberStateRepository, AlarmRepository {
  constructor(private readonly c: Conn) {}

  private readState(chamber: ChamberRef): ChamberState | undefined {
    const row = this.c
      .sql('SELECT owner_epoch, hwm, owner_id, state_updated_at, stream_id, stream_offset FROM chamber_state WHERE tool_id = ? AND chamber_id = ?')
      .get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
    return row ? stateFromRow(chamber, getter(row), 'chamber_state') : undefined;
  }

  get(chamber: ChamberRef): Promise<ChamberState | undefined> {
    return this.c.op('chamberState.get', 'read', () => {
      validateChamberRef(chamber);
      return this.readState(chamberOf(chamber));
    });
  }

  claim(chamberIn: ChamberRef, epoch: number, ownerId: string, now: Date): Promise<ChamberState> {
    return this.c.op('chamberState.claim', 'write', () => {
      validateClaim(chamberIn, epoch, ownerId, now);
      const chamber = chamberOf(chamberIn);
      return this.c.write(() => {
        const state = this.readState(chamber);
        if (!state) {
          this.c
            .sql('INSERT INTO chamber_state (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, ?, 0, ?, ?)')
            .run(chamber.toolId, chamber.chamberId, epoch, ownerId, now.getTime());
          return { ...chamber, ownerEpoch: epoch, ownerId, highWaterMark: 0, updatedAt: now };
        }
        if (state.ownerEpoch > epoch) throw new FencedError(chamber, epoch, state.ownerEpoch, state.ownerId);
        this.c
          .sql('UPDATE chamber_state SET owner_epoch = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ?')
          .run(epoch, ownerId, now.getTime(), chamber.toolId, chamber.chamberId);
        return { ...state, ownerEpoch: epoch, ownerId, updatedAt: now };
      });
    });
  }

  commitRun(input: CommitRunInput): Promise<CommitRunResult> {
    return this.c.op('chamberState.commitRun', 'write', () => {
      validateCommitRunInput(input);
      const chamber = chamberOf(input.chamber);
      const body = encodePointSet(input.points);
      const at = input.committedAt.getTime();
      return this.c.write((): CommitRunResult => {
        const state = this.readState(chamber);
        if (state && state.ownerEpoch > input.epoch) throw new FencedError(chamber, input.epoch, state.ownerEpoch, state.ownerId);
        const appliedAt = this.appliedSeq(chamber, input.runId);
        if (state && appliedAt !== undefined) {
          if (appliedAt === input.sequence) return { outcome: 'already-applied', state };
          // The run id was applied at another sequence (a re-published notification, of any age):
          // nothing of it is written; the mark moves past it (fenced like a commit) so the chamber goes on.
          if (state.highWaterMark >= input.sequence) return { outcome: 'duplicate-run', state, appliedSequence: appliedAt };
          this.c
            .sql('UPDATE chamber_state SET owner_epoch = ?, hwm = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ?')
            .run(input.epoch, input.sequence, input.ownerId, at, chamber.toolId, chamber.chamberId);
          return {
            outcome: 'duplicate-run',
            state: { ...chamber, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence, updatedAt: input.committedAt },
            appliedSequence: appliedAt,
          };
        }
        if (state && state.highWaterMark >= input.sequence) {
          const existing = this.c
            .sql('SELECT run_id FROM uchart_runs WHERE tool_id = ? AND chamber_id = ? AND seq = ?')
            .get(chamber.toolId, chamber.chamberId, input.sequence) as SqlRow | undefined;
          const storedRunId = typeof existing?.['run_id'] === 'string' ? existing['run_id'] : null;
          throw new SequenceConflictError(chamber, input.sequence, input.runId, storedRunId, state.highWaterMark);
        }
        const holdId = input.hold?.holdId ?? null;
        const hold = input.hold ? holdJson(input.hold, input.sequence, input.runId, input.committedAt) : null;
        if (state) {
          this.c
            .sql(
              `UPDATE chamber_state SET owner_epoch = ?, hwm = ?, owner_id = ?, state_updated_at = ?,
                 hold_id = COALESCE(?, hold_id), hold = COALESCE(?, hold)
               WHERE tool_id = ? AND chamber_id = ?`,
            )
            .run(input.epoch, input.sequence, input.ownerId, at, holdId, hold, chamber.toolId, chamber.chamberId);
        } else {
          this.c
            .sql('INSERT INTO chamber_state (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at, hold_id, hold) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
            .run(chamber.toolId, chamber.chamberId, input.epoch, input.sequence, input.ownerId, at, holdId, hold);
        }
        this.c
          .sql('INSERT INTO uchart_runs (tool_id, chamber_id, seq, run_id, epoch, committed_at, recipe, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
          .run(chamber.toolId, chamber.chamberId, input.sequence, input.runId, input.epoch, at, input.recipe ?? null, body);
        const alarm = this.c.sql(
          `INSERT INTO alarms (tool_id, chamber_id, seq, rule_id, indicator_key, run_id, epoch, committed_at, recipe, schema_version, body)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        );
        for (const a of input.alarms ?? []) {
          alarm.run(chamber.toolId, chamber.chamberId, input.sequence, a.ruleId, a.indicatorKey, input.runId, input.epoch, at, a.recipe ?? input.recipe ?? null, JSON_SCHEMA_VERSION, alarmBody(a));
        }
        this.c.sql('INSERT INTO applied_runs (tool_id, chamber_id, run_id, seq) VALUES (?, ?, ?, ?)').run(chamber.toolId, chamber.chamberId, input.runId, input.sequence);
        const event = this.c.sql('INSERT INTO outbox (tool_id, chamber_id, seq, idx, subject, msg_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?)');
        (input.events ?? []).forEach((e, i) => event.run(chamber.toolId, chamber.chamberId, input.sequence, i, e.subject, e.msgId, e.payload));
        writeMonitorState(this.c, chamber, input);
        writeMonitorModel(this.c, chamber, input);
        writeChamberEvent(this.c, chamber, input);
        writeChamberMemory(this.c, chamber, input);
        return {
          outcome: 'applied',
          state: { ...chamber, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence, updatedAt: input.committedAt },
        };
      });
    });
  }

  bindStream(input: BindStreamInput): Promise<ChamberState> {
    return this.c.op('chamberState.bindStream', 'write', () => {
      validateBindStream(input);
      const chamber = chamberOf(input.chamber);
      return this.c.write((): ChamberState => {
        const state = this.readState(chamber);
        if (!state) throw new InvalidRecordError('bindStream', [{ path: 'chamber', message: 'the chamber was never claimed' }]);
        if (state.ownerEpoch > input.epoch) throw new FencedError(chamber, input.epoch, state.ownerEpoch, state.ownerId);
        if (state.streamId !== input.expectedStreamId) return state;
        const offset = input.rebase ? state.highWaterMark : (state.streamOffset ?? 0);
        this.c
          .sql('UPDATE chamber_state SET stream_id = ?, stream_offset = ? WHERE tool_id = ? AND chamber_id = ?')
          .run(input.streamId, offset, chamber.toolId, chamber.chamberId);
        return { ...state, streamId: input.streamId, ...(offset > 0 ? { streamOffset: offset } : {}) };
      });
    });
  }

  private appliedSeq(chamber: ChamberRef, runId: string): number | undefined {
    const row = this.c.sql('SELECT seq FROM applied_runs WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').get(chamber.toolId, chamber.chamberId, runId) as
      | SqlRow
      | undefined;
    return row ? storedInt(row['seq'], { chamber, runId, table: 'applied_runs' }, 'seq', 1) : undefined;
  }

  appliedRun(chamber: ChamberRef, runId: string): Promise<number | undefined> {
    return this.c.op('chamberState.appliedRun', 'read', () => {
      validateRunRef({ ...chamber, runId });
      return this.appliedSeq(chamberOf(chamber), runId);
    });
  }

  list(chamber: ChamberRef, options: { limit: number }): Promise<AlarmRecord[]> {
    return this.c.op('alarms.list', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const rows = this.c
        .sql('SELECT * FROM alarms WHERE tool_id = ? AND chamber_id = ? ORDER BY seq DESC, rule_id, indicator_key LIMIT ?')
        .all(chamber.toolId, chamber.chamberId, options.limit) as SqlRow[];
      return rows.map((r) => alarmFromRow(chamberOf(chamber), getter(r), 'alarms'));
    });
  }

  ofRun(chamber: ChamberRef, sequence: number): Promise<AlarmRecord[]> {
    return this.c.op('alarms.ofRun', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('sequence', sequence);
      const rows = this.c
        .sql('SELECT * FROM alarms WHERE tool_id = ? AND chamber_id = ? AND seq = ? ORDER BY rule_id, indicator_key')
        .all(chamber.toolId, chamber.chamberId, sequence) as SqlRow[];
      return rows.map((r) => alarmFromRow(chamberOf(chamber), getter(r), 'alarms'));
    });
  }

  hold(chamber: ChamberRef): Promise<HoldRecord | null> {
    return this.c.op('alarms.hold', 'read', () => {
      validateChamberRef(chamber);
      const row = this.c.sql('SELECT hold FROM chamber_state WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
      return holdFromJson(chamberOf(chamber), row?.['hold'] ?? null, 'chamber_state');
    });
  }

  releaseHold(chamber: ChamberRef, holdId: string): Promise<boolean> {
    return this.c.op('alarms.releaseHold', 'write', () => {
      validateChamberRef(chamber);
      const r = this.c
        .sql('UPDATE chamber_state SET hold_id = NULL, hold = NULL WHERE tool_id = ? AND chamber_id = ? AND hold_id = ?')
        .run(chamber.toolId, chamber.chamberId, holdId);
      return r.changes === 1;
    });
  }

  history(chamber: ChamberRef, options: { limit: number; beforeSequence?: number }): Promise<RunPointSet[]> {
    return this.c.op('uchart.history', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const before = options.beforeSequence;
      if (before !== undefined) validatePositiveInt('beforeSequence', before);
      const rows = (
        before !== undefined
          ? this.c
              .sql('SELECT * FROM uchart_runs WHERE tool_id = ? AND chamber_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?')
              .all(chamber.toolId, chamber.chamberId, before, options.limit)
          : this.c.sql('SELECT * FROM uchart_runs WHERE tool_id = ? AND chamber_id = ? ORDER BY seq DESC LIMIT ?').all(chamber.toolId, chamber.chamberId, options.limit)
      ) as SqlRow[];
      return rows.map((r) => runPointSetFromRow(chamberOf(chamber), getter(r), 'uchart_runs')).reverse();
    });
  }

  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined> {
    return this.c.op('uchart.run', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('sequence', sequence);
      const row = this.c.sql('SELECT * FROM uchart_runs WHERE tool_id = ? AND chamber_id = ? AND seq = ?').get(chamber.toolId, chamber.chamberId, sequence) as
        | SqlRow
        | undefined;
      return row ? runPointSetFromRow(chamberOf(chamber), getter(row), 'uchart_runs') : undefined;
    });
  }
}
