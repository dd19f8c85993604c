import { JetStreamApiError } from '@nats-io/jetstream';
import { NoRespondersError, TimeoutError } from '@nats-io/nats-core';
import { mapKvError, NatsUnavailableError, RevisionConflictError } from './errors';

/** What @nats-io/jetstream throws when no JetStream answers (its class is not exported). */
class JetStreamNotEnabled extends Error {
  override readonly name = 'JetStreamNotEnabled';
}

describe('mapKvError', () => {
  it('maps "jetstream is not enabled" (no JetStream responder, e.g. a cluster node rejoining) to a retryable outage', () => {
    const err = mapKvError(new JetStreamNotEnabled('jetstream is not enabled', { cause: new NoRespondersError('dc.x') }), 'dc-notifications', 'dc.t.c.completed');
    expect(err).toBeInstanceOf(NatsUnavailableError);
    expect((err as NatsUnavailableError).retryable).toBe(true);
    expect(err.message).toBe('dc-notifications/dc.t.c.completed: jetstream is not enabled');
  });

  it('maps "JetStream system temporarily unavailable" (a cluster electing a leader) to a retryable outage', () => {
    const err = mapKvError(new JetStreamApiError({ err_code: 10008, code: 503, description: 'JetStream system temporarily unavailable' }), '(publish)', 'defense.alarms.t.c');
    expect(err).toBeInstanceOf(NatsUnavailableError);
  });

  it('maps "no suitable peers for placement, peer offline" to a retryable outage, other placement failures not', () => {
    const offline = mapKvError(new JetStreamApiError({ err_code: 10005, code: 400, description: 'no suitable peers for placement, peer offline' }), 'KV_assignments', '(bucket)');
    expect(offline).toBeInstanceOf(NatsUnavailableError);
    expect(offline.message).toBe('KV_assignments/(bucket): no suitable peers for placement, peer offline');
    const tags = new JetStreamApiError({ err_code: 10005, code: 400, description: "no suitable peers for placement, tags not matched ['az:x']" });
    expect(mapKvError(tags, 'KV_assignments', '(bucket)')).toBe(tags);
  });

  it('maps transport errors to an outage and a lost compare-and-set to a conflict; anything else is kept', () => {
    expect(mapKvError(new TimeoutError(), 'b', 'k')).toBeInstanceOf(NatsUnavailableError);
    const wrongSeq = new JetStreamApiError({ err_code: 10071, code: 400, description: 'wrong last sequence: 3' });
    expect(mapKvError(wrongSeq, 'b', 'k', 2)).toBeInstanceOf(RevisionConflictError);
    const other = new Error('boom');
    expect(mapKvError(other, 'b', 'k')).toBe(other);
  });
});
