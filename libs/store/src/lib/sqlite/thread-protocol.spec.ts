import {
  CorruptRecordError,
  FencedError,
  InvalidRecordError,
  SequenceConflictError,
  StoreClosedError,
  StoreUnavailableError,
  TornTraceError,
  TraceNotFoundError,
  UnknownSchemaVersionError,
  VersionConflictError,
} from '@defender/contracts';
import { MigrationError } from '../migration-error';
import { fromWireError, sampleBuffers, THREAD_METHODS, toWireError, WIRE_READS } from './thread-protocol';
import { SqliteStore } from './sqlite-store';

/** What the caller's side sees of an error thrown on the store thread (the wire form is structured-cloned). */
const across = (err: unknown): Error => fromWireError(structuredClone(toWireError(err)));

const chamber = { toolId: 'T1', chamberId: 'C1' };

describe('store thread errors', () => {
  const cases: [string, Error][] = [
    ['StoreUnavailableError', new StoreUnavailableError('SQLite: busy', { outcomeUnknown: true })],
    ['FencedError', new FencedError(chamber, 3, 4, 'defender-4')],
    ['SequenceConflictError', new SequenceConflictError(chamber, 7, 'run-7', 'run-x', 9)],
    [
      'VersionConflictError',
      new VersionConflictError({ chamber, indicatorKey: 'k', version: 2, table: 'limit_sets' }),
    ],
    [
      'InvalidRecordError',
      new InvalidRecordError('claim', [{ path: 'epoch', message: 'must be a positive integer' }]),
    ],
    ['CorruptRecordError', new CorruptRecordError('malformed', { chamber, table: 'alarms' }, 'bad JSON')],
    ['UnknownSchemaVersionError', new UnknownSchemaVersionError({ table: 'strategies' }, 9, [1])],
    [
      'TornTraceError',
      new TornTraceError('missing-chunk', { chamber, runId: 'r', chunk: 2 }, 'chunk 2 missing'),
    ],
    ['TraceNotFoundError', new TraceNotFoundError(chamber, 'run-1')],
    ['StoreClosedError', new StoreClosedError()],
    ['MigrationError', new MigrationError('checksum differs')],
  ];

  it.each(cases)('%s keeps its class, message and fields', (name, err) => {
    const back = across(err);
    expect(back).toBeInstanceOf(err.constructor);
    expect(back.name).toBe(name);
    expect(back.message).toBe(err.message);
    expect({ ...back }).toEqual({ ...err });
    expect(back.stack).toBe(err.stack);
  });

  it('keeps the cause chain, including errors of classes it does not know', () => {
    const driver = Object.assign(new Error('database is locked'), {
      name: 'SqliteError',
      code: 'SQLITE_BUSY',
    });
    const err = new StoreUnavailableError(
      'SQLite: chamberState.claim failed: database is locked (SQLITE_BUSY)',
      { cause: driver },
    );
    const back = across(err);
    expect(back).toBeInstanceOf(StoreUnavailableError);
    const cause = back.cause as Error & { code?: string };
    expect(cause).toBeInstanceOf(Error);
    expect(cause).toMatchObject({ name: 'SqliteError', message: 'database is locked', code: 'SQLITE_BUSY' });
    expect(across(new Error('outer', { cause: 'a plain reason' })).cause).toBe('a plain reason');
  });

  it('turns a thrown non-error into an Error that names it', () => {
    expect(across(42).message).toBe('non-error thrown: 42');
  });

  it('drops fields that cannot cross a thread instead of failing', () => {
    const err = Object.assign(new Error('x'), { callback: () => 1, code: 'E1' });
    expect({ ...across(err) }).toEqual({ code: 'E1' });
  });
});

describe('sampleBuffers', () => {
  it('lists each sample buffer the predicate takes once, never Node Buffers', () => {
    const shared = new ArrayBuffer(64);
    const own = new Float32Array(4);
    const value = {
      svids: new Map<string, Float64Array | Float32Array>([
        ['a', new Float64Array(shared, 0, 4)],
        ['b', new Float32Array(shared, 32, 8)],
        ['c', own],
      ]),
      body: Buffer.alloc(16),
      at: new Date(0),
    };
    const all = sampleBuffers(value, () => true);
    expect(all.length).toBe(2);
    expect(all[0]).toBe(shared);
    expect(all[1]).toBe(own.buffer);
    const some = sampleBuffers(value, (b) => b !== shared);
    expect(some.length).toBe(1);
    expect(some[0]).toBe(own.buffer);
  });
});

describe('reads the caller decodes (WIRE_READS)', () => {
  it('are thread operations, each served by the store\'s uchart.wire', async () => {
    const store = await SqliteStore.open({ filename: ':memory:' });
    try {
      for (const op of WIRE_READS) {
        const [repo, method] = op.split('.') as [keyof typeof THREAD_METHODS, string];
        expect(Object.keys(THREAD_METHODS[repo])).toContain(method);
        expect(repo).toBe('uchart');
        expect(typeof (store.uchart.wire as unknown as Record<string, unknown>)[method]).toBe('function');
      }
      expect([...WIRE_READS].sort()).toEqual(['uchart.currentLimitSets', 'uchart.limitSet', 'uchart.limitSetHistory']);
    } finally {
      await store.close();
    }
  });
});
