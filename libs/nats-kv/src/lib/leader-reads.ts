import { Bucket, type KV, type KvEntry } from '@nats-io/kv';
import { isStreamNotFound, NatsUnavailableError } from './errors';

/**
 * A KV get answered by the bucket stream's leader (`STREAM.MSG.GET`), never by a replica's direct get.
 *
 * A bucket with `allow_direct` (the default) lets any replica answer `kv.get`, and a client is
 * answered by the replica of the server it is connected to: one that is behind, or that rejoined
 * after losing its store, answers "no such revision" for a value its leader holds (the nats-cluster
 * chaos suite: a defender connected to a wiped node took every new map for "superseded" and never
 * applied it). Reads that decide something (the map and its chunks) come from the leader; a leader
 * that cannot be reached is an outage (retry), not an answer. docs/chaos/findings.md, 5 and 6.
 *
 * Any other KV implementation, a bucket without direct gets, or one whose `get` was replaced (a
 * wrapper: it defines its own reads) is read with its own `get`.
 */
export async function getFromLeader(kv: KV, key: string, opts?: { revision: number }): Promise<KvEntry | null> {
  if (!(kv instanceof Bucket) || !kv.direct || kv.get !== Bucket.prototype.get) return kv.get(key, opts);
  const ek = kv.encodeKey(key);
  kv.validateKey(ek);
  const query = opts && opts.revision > 0 ? { seq: opts.revision } : { last_by_subj: kv.subjectForKey(ek) };
  let sm;
  try {
    sm = await kv.jsm.streams.getMessage(kv.bucketName(), query);
  } catch (err) {
    // A bucket NATS lost (restarted empty) is an outage to wait out, as a direct get's "no
    // responders" was: whoever needs the bucket creates it again (ADR 0007).
    if (isStreamNotFound(err)) throw new NatsUnavailableError(`${kv.bucketName()}: stream not found (the bucket is missing: NATS lost its store?)`, { cause: err });
    throw err;
  }
  if (sm === null) return null;
  const e = kv.smToEntry(sm);
  // A revision of another key (the library's own get answers null the same way).
  return e.key === key ? e : null;
}
