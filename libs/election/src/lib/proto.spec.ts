import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidRequestError } from './errors';
import {
  campaignRequestFromWire,
  ELECTION_PROTO_FILE,
  electionRequestFromWire,
  leaderStateFromWire,
  leaderStateToWire,
  leaseInfoFromWire,
  leaseInfoToWire,
  leaseRequestFromWire,
  resolveProtoRoot,
  sourceProtoRoot,
} from './proto';

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidRequestError) return err.problems.map((p) => `${p.field}: ${p.message}`);
    throw err;
  }
  throw new Error('expected InvalidRequestError');
}

describe('wire requests are validated at the edge', () => {
  const KEY = 'lease-key-of-pod-1-0123456789';

  it('accepts good requests', () => {
    expect(
      campaignRequestFromWire({ election: 'defender.controller', candidate: 'pod-1', ttl_ms: 10_000, lease_key: KEY }),
    ).toEqual({
      election: 'defender.controller',
      candidate: 'pod-1',
      ttlMs: 10_000,
      leaseKey: KEY,
    });
    expect(campaignRequestFromWire({ election: 'e', candidate: 'c', ttl_ms: 4_000, min_token: 41, lease_key: KEY })).toEqual({
      election: 'e',
      candidate: 'c',
      ttlMs: 4_000,
      minToken: 41,
      leaseKey: KEY,
    });
    expect(leaseRequestFromWire({ election: 'e', candidate: 'c', fencing_token: 3, lease_key: KEY })).toEqual({
      election: 'e',
      candidate: 'c',
      fencingToken: 3,
      leaseKey: KEY,
    });
    expect(electionRequestFromWire({ election: 'e_1-x' })).toEqual({ election: 'e_1-x' });
  });

  it('names every bad field by its proto name; a lease key is required on the wire (issue 50)', () => {
    expect(
      problems(() => campaignRequestFromWire({ election: '', candidate: 'has space', ttl_ms: 10, lease_key: KEY })),
    ).toEqual([
      'election: is required',
      'candidate: must be printable ASCII without spaces',
      'ttl_ms: must be 1000..3600000 ms',
    ]);
    expect(problems(() => campaignRequestFromWire({ election: 'a..b', candidate: 'c', ttl_ms: 0, lease_key: KEY }))).toEqual([
      'election: must be [A-Za-z0-9_-] words joined by single dots',
      'ttl_ms: is required',
    ]);
    expect(problems(() => leaseRequestFromWire({ election: 'e', candidate: 'c', fencing_token: 0, lease_key: KEY }))).toEqual(
      ['fencing_token: is required'],
    );
    // proto3 sends an absent string as ''.
    expect(problems(() => leaseRequestFromWire({ election: 'e', candidate: 'c', fencing_token: 3, lease_key: '' }))).toEqual(['lease_key: is required']);
    expect(problems(() => campaignRequestFromWire({ election: 'e', candidate: 'c', ttl_ms: 4_000 }))).toEqual(['lease_key: is required']);
    expect(problems(() => campaignRequestFromWire({ election: 'e', candidate: 'c', ttl_ms: 4_000, lease_key: 'short' }))).toEqual(['lease_key: must be at least 16 characters']);
    expect(problems(() => electionRequestFromWire({ election: 'x'.repeat(129) }))).toEqual([
      'election: must be at most 128 characters',
    ]);
    expect(problems(() => campaignRequestFromWire(undefined))).toHaveLength(4);
    expect(problems(() => campaignRequestFromWire({ election: 'e', candidate: 'c', ttl_ms: 4_000, min_token: Number.MAX_SAFE_INTEGER, lease_key: KEY }))).toEqual([
      `min_token: must be <= ${Number.MAX_SAFE_INTEGER - 2 ** 32}`,
    ]);
  });

  it('round-trips answers', () => {
    const info = {
      election: 'e',
      leader: 'a',
      isLeader: true,
      fencingToken: 9,
      acquiredAtMs: 1,
      leaseExpiresAtMs: 2,
      ttlMs: 3,
      agentTimeMs: 4,
      retryAfterMs: 0,
      state: 'held' as const,
    };
    expect(leaseInfoFromWire(leaseInfoToWire(info))).toEqual(info);
    const view = {
      election: 'e',
      state: 'expired' as const,
      leader: null,
      fencingToken: 9,
      acquiredAtMs: 1,
      leaseExpiresAtMs: 2,
      agentTimeMs: 3,
      revision: 4,
    };
    expect(leaderStateFromWire(leaderStateToWire(view))).toEqual(view);
  });
});

describe('proto location', () => {
  it('is found in the source tree, and a bundle directory is preferred when it has the file', () => {
    expect(existsSync(join(sourceProtoRoot(), ELECTION_PROTO_FILE))).toBe(true);
    expect(resolveProtoRoot(['/nonexistent'])).toBe(sourceProtoRoot());
    expect(resolveProtoRoot([sourceProtoRoot(), '/elsewhere'])).toBe(sourceProtoRoot());
  });
});
