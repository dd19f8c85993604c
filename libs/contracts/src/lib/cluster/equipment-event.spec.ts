import { EQUIPMENT_EVENT_KINDS, EQUIPMENT_EVENT_LIMITS, equipmentEventSubject, parseEquipmentEvent, parseEquipmentEventSubject, type EquipmentEvent } from './equipment-event';
import { InvalidMessageError } from './parse';
import { parseNotificationSubject } from './notification';

const base = { schema: 1, toolId: 'ETCH01', chamberId: 'PM1', eventId: 'ev-1', at: '2026-12-07T10:00:00.000Z' } as const;
/** The smallest valid event of each kind. */
const valid: Record<string, Partial<EquipmentEvent>> = {
  pm: { kind: 'pm' },
  clean: { kind: 'clean' },
  'part-change': { kind: 'part-change', parts: ['focus ring', 'upper electrode'] },
  seasoning: { kind: 'seasoning' },
  'recipe-change': { kind: 'recipe-change', recipe: 'OX-ETCH-7' },
  'long-idle': { kind: 'long-idle', idleSeconds: 36 * 3600 },
  note: { kind: 'note', note: 'chuck temperature reading suspect\nafter the clean' },
};

const problems = (e: unknown): string => {
  try {
    parseEquipmentEvent(JSON.stringify(e));
  } catch (err) {
    if (err instanceof InvalidMessageError) return err.message;
    throw err;
  }
  return 'valid';
};

describe('equipment events (issue 49, item 2)', () => {
  it.each(EQUIPMENT_EVENT_KINDS)('a %s event with what its kind needs is valid and parses to itself', (kind) => {
    const e = { ...base, ...valid[kind], author: 'host-mes', publishedAt: '2026-12-07T10:00:01.000Z' };
    expect(parseEquipmentEvent(JSON.stringify(e))).toEqual(e);
  });

  it.each([
    ['part-change', 'parts'],
    ['recipe-change', 'recipe'],
    ['long-idle', 'idleSeconds'],
    ['note', 'note'],
  ] as const)('a %s event without %s is refused, saying which field', (kind, field) => {
    const { [field]: _dropped, ...rest } = valid[kind] as Record<string, unknown>;
    expect(problems({ ...base, ...rest })).toContain(`${field}: is required for a ${kind} event`);
  });

  it('refuses what does not belong: an unknown kind or field, fields of another kind, bad values', () => {
    expect(problems({ ...base, kind: 'reboot' })).toMatch(/kind/);
    expect(problems({ ...base, kind: 'pm', operator: 'x' })).toMatch(/operator|unrecognized/i);
    expect(problems({ ...base, kind: 'pm', parts: ['ring'] })).toContain('parts: belongs to a part-change event only');
    expect(problems({ ...base, kind: 'clean', idleSeconds: 10 })).toContain('idleSeconds: belongs to a long-idle event only');
    expect(problems({ ...base, kind: 'part-change', parts: ['ring', 'ring'] })).toContain('parts: contains duplicates');
    expect(problems({ ...base, kind: 'part-change', parts: [] })).toMatch(/parts/);
    expect(problems({ ...base, kind: 'long-idle', idleSeconds: 0 })).toMatch(/idleSeconds/);
    expect(problems({ ...base, kind: 'long-idle', idleSeconds: EQUIPMENT_EVENT_LIMITS.idleSeconds + 1 })).toMatch(/idleSeconds/);
    expect(problems({ ...base, kind: 'long-idle', idleSeconds: 1.5 })).toMatch(/idleSeconds/);
    expect(problems({ ...base, kind: 'note', note: 'bell\u0007' })).toContain('note: contains control characters');
    expect(problems({ ...base, kind: 'note', note: 'x'.repeat(EQUIPMENT_EVENT_LIMITS.note + 1) })).toMatch(/note/);
    expect(problems({ ...base, kind: 'pm', at: 'yesterday' })).toMatch(/at/);
    expect(problems({ ...base, kind: 'pm', toolId: 'ETCH.01' })).toMatch(/toolId/);
    expect(problems({ ...base, kind: 'pm', eventId: '' })).toMatch(/eventId/);
    expect(problems({ ...base, kind: 'pm', schema: 2 })).toMatch(/schema/);
    expect(problems('a string')).toContain('(root): Invalid input: expected object');
    expect(() => parseEquipmentEvent('{not json')).toThrow(InvalidMessageError);
  });

  it('has its own subject per chamber, which no run notification subject matches and back', () => {
    expect(equipmentEventSubject('ETCH01', 'PM1')).toBe('dc.ETCH01.PM1.event');
    expect(parseEquipmentEventSubject('dc.ETCH01.PM1.event')).toEqual({ toolId: 'ETCH01', chamberId: 'PM1' });
    expect(parseEquipmentEventSubject('dc.ETCH01.PM1.completed')).toBeUndefined();
    expect(parseEquipmentEventSubject('dc.ETCH01.event')).toBeUndefined();
    expect(parseEquipmentEventSubject('dc.ETCH.01.PM1.event')).toBeUndefined();
    expect(parseNotificationSubject(equipmentEventSubject('ETCH01', 'PM1'))).toBeUndefined();
  });
});
