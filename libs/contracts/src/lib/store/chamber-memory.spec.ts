import fc from 'fast-check';
import {
  CHAMBER_MEMORY_LIMITS,
  CHAMBER_MEMORY_SCHEMA_VERSION,
  chamberMemoryIssues,
  decodeChamberMemory,
  EMPTY_CHAMBER_MEMORY,
  encodeChamberMemory,
  memoryCovers,
  rememberRun,
  type ChamberMemory,
} from './chamber-memory';
import { CorruptRecordError, InvalidRecordError, UnknownSchemaVersionError } from './errors';
import type { CommitRunInput } from './records';
import { validateCommitRunInput } from './validation';

const context = { chamber: { toolId: 'T1', chamberId: 'C1' }, table: 'chamber_memory' };

const memoryArb: fc.Arbitrary<ChamberMemory> = fc.record({
  recentAlarms: fc.array(fc.boolean(), { maxLength: CHAMBER_MEMORY_LIMITS.recentAlarms }),
  fromFirstRun: fc.boolean(),
});

describe('chamber memory record', () => {
  it('round-trips every valid memory through its stored text', () => {
    fc.assert(
      fc.property(memoryArb, (memory) => {
        expect(chamberMemoryIssues(memory)).toEqual([]);
        expect(decodeChamberMemory(CHAMBER_MEMORY_SCHEMA_VERSION, encodeChamberMemory(memory), context)).toEqual(memory);
      }),
    );
  });

  it('stores the flags as one string of 0 and 1, oldest first', () => {
    expect(encodeChamberMemory({ recentAlarms: [false, true, true], fromFirstRun: true })).toBe('{"recentAlarms":"011","fromFirstRun":true}');
  });

  it('stepped over runs, remembers the newest flags in order and whether it saw the first run', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 3 * CHAMBER_MEMORY_LIMITS.recentAlarms }), (runs) => {
        const memory = runs.reduce(rememberRun, EMPTY_CHAMBER_MEMORY);
        expect(memory.recentAlarms).toEqual(runs.slice(-CHAMBER_MEMORY_LIMITS.recentAlarms));
        expect(memory.fromFirstRun).toBe(runs.length <= CHAMBER_MEMORY_LIMITS.recentAlarms);
        expect(chamberMemoryIssues(memory)).toEqual([]);
      }),
    );
  });

  it('covers a window it holds, or any window when it holds every run there has been', () => {
    expect(memoryCovers({ recentAlarms: [true, false], fromFirstRun: false }, 2)).toBe(true);
    expect(memoryCovers({ recentAlarms: [true, false], fromFirstRun: false }, 3)).toBe(false);
    expect(memoryCovers({ recentAlarms: [true], fromFirstRun: true }, 4)).toBe(true);
    expect(memoryCovers(EMPTY_CHAMBER_MEMORY, 0)).toBe(true);
  });

  it('names every invalid field', () => {
    const tooMany = Array.from({ length: CHAMBER_MEMORY_LIMITS.recentAlarms + 1 }, () => false);
    expect(chamberMemoryIssues({ recentAlarms: tooMany, fromFirstRun: 'yes', extra: 1 }).map((i) => i.path)).toEqual([
      'memory.recentAlarms',
      'memory.fromFirstRun',
      'memory.extra',
    ]);
    expect(chamberMemoryIssues({ recentAlarms: [1], fromFirstRun: true }).map((i) => i.path)).toEqual(['memory.recentAlarms']);
    expect(chamberMemoryIssues(null).map((i) => i.path)).toEqual(['memory']);
  });

  it('refuses an unknown schema and corrupt text on load', () => {
    const text = encodeChamberMemory({ recentAlarms: [true], fromFirstRun: false });
    expect(() => decodeChamberMemory(2, text, context)).toThrow(UnknownSchemaVersionError);
    expect(() => decodeChamberMemory(CHAMBER_MEMORY_SCHEMA_VERSION, '{"recentAlarms":', context)).toThrow(CorruptRecordError);
    expect(() => decodeChamberMemory(CHAMBER_MEMORY_SCHEMA_VERSION, '{"recentAlarms":"012","fromFirstRun":true}', context)).toThrow(/string of 0 and 1/);
    expect(() => decodeChamberMemory(CHAMBER_MEMORY_SCHEMA_VERSION, '{"recentAlarms":"01"}', context)).toThrow(/fromFirstRun/);
    expect(() => decodeChamberMemory(CHAMBER_MEMORY_SCHEMA_VERSION, '[]', context)).toThrow(CorruptRecordError);
  });

  it('is checked in a run commit', () => {
    const input: CommitRunInput = {
      chamber: context.chamber,
      epoch: 1,
      ownerId: 'd-0',
      sequence: 1,
      runId: 'R1',
      committedAt: new Date(0),
      points: [],
      chamberMemory: { recentAlarms: [true], fromFirstRun: 'no' as unknown as boolean },
    };
    expect(() => validateCommitRunInput(input)).toThrow(InvalidRecordError);
    expect(() => validateCommitRunInput({ ...input, chamberMemory: { recentAlarms: [true], fromFirstRun: true } })).not.toThrow();
  });
});
