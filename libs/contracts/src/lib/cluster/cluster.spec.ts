import {
  deadLetterRecord,
  MAX_DEAD_LETTER_DETAIL_CHARS,
  MAX_DEAD_LETTER_PAYLOAD_BYTES,
  AssignmentMap,
  chamberKeyOf,
  defenderIdOf,
  defenderNumberOf,
  InvalidMessageError,
  isNewerMap,
  parseAssignmentMap,
  parseHeartbeat,
  parseStableIdClaim,
  notificationSubject,
  parseNotificationSubject,
  parseRunNotification,
  splitChamberKey,
} from './index';

const T = '2026-11-25T10:00:00.000Z';

function map(over: Partial<AssignmentMap> = {}): AssignmentMap {
  return {
    schema: 1,
    version: 3,
    timestamp: T,
    state: 'STABLE',
    lifecycleState: 'stable',
    firstAssignmentAt: T,
    fencingToken: '7',
    controllerId: 'controller-a',
    trigger: 'crash',
    defenderCount: 2,
    chamberCount: 2,
    assignments: { 'tool001:chamber1': 'defender-0', 'tool001:chamber2': 'defender-1' },
    lastMovedAt: {},
    defenderInfo: {
      'defender-0': { chambers: 1, weight: 30_000, capacity: 1 },
      'defender-1': { chambers: 1, weight: 120_000, capacity: 1 },
    },
    statistics: {
      minChambersPerDefender: 1,
      maxChambersPerDefender: 1,
      avgChambersPerDefender: 1,
      minWeightPerDefender: 30_000,
      maxWeightPerDefender: 120_000,
      avgWeightPerDefender: 75_000,
      weightVariancePercent: 60,
      calculationDurationMs: 0.4,
      chambersMoved: 1,
      movedWeight: 30_000,
      movedWeightFraction: 0.2,
      floorFraction: 0.2,
    },
    ...over,
  };
}

describe('ids', () => {
  it('round-trips defender ids and chamber keys', () => {
    expect(defenderIdOf(12)).toBe('defender-12');
    expect(defenderNumberOf('defender-12')).toBe(12);
    expect(defenderNumberOf('defender-012')).toBeUndefined();
    expect(defenderNumberOf('worker-1')).toBeUndefined();
    expect(() => defenderIdOf(-1)).toThrow(RangeError);
    expect(splitChamberKey(chamberKeyOf('tool001', 'chamber_2'))).toEqual({ toolId: 'tool001', chamberId: 'chamber_2' });
    expect(() => splitChamberKey('tool.1:ch')).toThrow(/malformed chamber key/);
  });
});

describe('assignment map', () => {
  it('parses a valid map from bytes', () => {
    const m = map();
    expect(parseAssignmentMap(new TextEncoder().encode(JSON.stringify(m)))).toEqual(m);
  });

  it.each([
    ['not JSON', '{"version":', /invalid-json/],
    ['a wrong type', JSON.stringify(map({ version: 0 })), /version: /],
    ['a bad chamber key', JSON.stringify({ ...map(), assignments: { 'a.b:c': 'defender-0' }, chamberCount: 1 }), /assignments/],
    ['an owner missing from defenderInfo', JSON.stringify({ ...map(), assignments: { 't:c': 'defender-9' }, chamberCount: 1 }), /missing from defenderInfo/],
    ['a miscounted map', JSON.stringify(map({ chamberCount: 5 })), /chamberCount/],
    ['a numeric token', JSON.stringify({ ...map(), fencingToken: 7 }), /fencingToken/],
  ])('rejects %s with a reason', (_what, data, reason) => {
    expect(() => parseAssignmentMap(data)).toThrow(InvalidMessageError);
    expect(() => parseAssignmentMap(data)).toThrow(reason);
  });

  it.each([
    [{ version: 4, fencingToken: '7' }, { version: 3, fencingToken: '7' }, true],
    [{ version: 4, fencingToken: '8' }, { version: 3, fencingToken: '7' }, true],
    [{ version: 3, fencingToken: '7' }, { version: 3, fencingToken: '7' }, false],
    [{ version: 2, fencingToken: '9' }, { version: 3, fencingToken: '7' }, false],
    [{ version: 9, fencingToken: '6' }, { version: 3, fencingToken: '7' }, false],
    [{ version: 2, fencingToken: '18446744073709551617' }, { version: 1, fencingToken: '18446744073709551616' }, true],
  ])('isNewerMap(%j over %j) = %s', (candidate, held, expected) => {
    expect(isNewerMap(candidate, held)).toBe(expected);
  });
});

describe('heartbeat and stable-id claim', () => {
  it('parses valid records and rejects bad ones with the field named', () => {
    const hb = {
      schema: 1,
      defenderId: 'defender-3',
      state: 'STABLE',
      mapVersionSeen: 4,
      load: { chambers: 80, inflight: 2, processedTotal: 1000 },
      intervalSeconds: 2,
      startedAt: T,
      sentAt: T,
    };
    expect(parseHeartbeat(JSON.stringify(hb))).toEqual(hb);
    expect(() => parseHeartbeat(JSON.stringify({ ...hb, state: 'NAPPING' }))).toThrow(/state/);
    const claim = { schema: 1, defenderId: 'defender-3', ownerId: 'uid-1', claimedAt: T, refreshedAt: T, generation: 4, intervalSeconds: 2 };
    expect(parseStableIdClaim(JSON.stringify(claim))).toEqual(claim);
    expect(() => parseStableIdClaim(JSON.stringify({ ...claim, refreshedAt: 'yesterday' }))).toThrow(/refreshedAt/);
  });
});

describe('run notification', () => {
  const ok = {
    schema: 1,
    toolId: 'tool001',
    chamberId: 'chamber2',
    runId: 'run-42',
    recipe: 'ETCH-A',
    contextWindow: { start: '2026-11-25T10:00:00.000Z', end: '2026-11-25T10:10:00.000Z' },
    svids: ['pressure', 'rf_power'],
    trace: { store: 'default', samples: 600 },
    completedAt: '2026-11-25T10:10:01.000Z',
  };

  it('parses a valid notification and maps subjects both ways', () => {
    expect(parseRunNotification(JSON.stringify(ok))).toEqual(ok);
    expect(notificationSubject('tool001', 'chamber2')).toBe('dc.tool001.chamber2.completed');
    expect(parseNotificationSubject('dc.tool001.chamber2.completed')).toEqual({ toolId: 'tool001', chamberId: 'chamber2' });
    expect(parseNotificationSubject('dc.tool001.chamber2.completion')).toBeUndefined();
  });

  it.each([
    ['missing runId', { ...ok, runId: undefined }, /runId/],
    ['a wrong type', { ...ok, svids: 'pressure' }, /svids/],
    ['an inverted window', { ...ok, contextWindow: { start: ok.contextWindow.end, end: ok.contextWindow.start } }, /before start/],
    ['duplicate SVIDs', { ...ok, svids: ['a', 'a'] }, /duplicates/],
    ['a dotted tool id', { ...ok, toolId: 'tool.1' }, /toolId/],
  ])('rejects %s', (_what, value, reason) => {
    expect(() => parseRunNotification(JSON.stringify(value))).toThrow(reason);
  });
});

describe('dead letters are bounded whatever the input', () => {
  const base = { reason: 'invalid-json' as const, subject: 'dc.t.c.completed', streamSequence: 7, defenderId: 'defender-1', attempts: 1, deadLetteredAt: '2026-11-27T08:00:00.000Z' };

  it('carries a small payload whole, with its size', () => {
    const dl = deadLetterRecord({ ...base, detail: 'bad', payload: new TextEncoder().encode('{"runId": ') });
    expect(dl).toEqual({ schema: 1, ...base, detail: 'bad', payloadBase64: Buffer.from('{"runId": ').toString('base64'), payloadBytes: 10 });
  });

  it('cuts a large payload and a long detail to their bounds and says so', () => {
    const payload = new Uint8Array(MAX_DEAD_LETTER_PAYLOAD_BYTES * 3).fill(65);
    const dl = deadLetterRecord({ ...base, detail: 'x'.repeat(10 * MAX_DEAD_LETTER_DETAIL_CHARS), payload });
    expect(dl.payloadTruncated).toBe(true);
    expect(dl.payloadBytes).toBe(payload.byteLength);
    expect(Buffer.from(dl.payloadBase64, 'base64').byteLength).toBe(MAX_DEAD_LETTER_PAYLOAD_BYTES);
    expect(dl.detail.length).toBe(MAX_DEAD_LETTER_DETAIL_CHARS);
    // Far below NATS's default max_payload (1 MiB), for a payload of any size.
    expect(JSON.stringify(dl).length).toBeLessThan(100_000);
  });
});
