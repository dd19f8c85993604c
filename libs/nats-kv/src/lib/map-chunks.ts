import { createHash } from 'node:crypto';
import {
  AssignmentMap,
  AssignmentMapChunk,
  AssignmentMapHead,
  chunkEntryProblem,
  InvalidMessageError,
  MAX_MAP_CHUNKS,
  parseAssignmentMapChunk,
} from '@defender/contracts';

/**
 * The chunked map's codec (ADR 0009), pure: a map -> the head's summary and its chunk values, and
 * back. The KV side (keys, slots, revisions) is in assignment-map.ts.
 */

/**
 * Default most bytes of one chunk value: 20,000 chambers (about 1 MB as JSON) take 33 chunks. A
 * defender reads the head and the one or two chunks holding its chambers: 48 KB median at 20,000
 * chambers / 200 defenders, against 112 KB with 96 KiB chunks, at the same publication and
 * whole-read time (measured, ADR 0009).
 */
export const DEFAULT_CHUNK_BYTES = 32 * 1024;

/** No stored value of the map (head or chunk) may exceed this (issue 27: well below NATS's 1 MB max_payload). */
export const MAX_MAP_VALUE_BYTES = 256 * 1024;

/** SHA-256 of a stored value, base64url (43 characters). */
export function valueDigest(value: Uint8Array | string): string {
  return createHash('sha256').update(value).digest('base64url');
}

export interface EncodedMap {
  /** The head without the chunks' slot and revisions (known only once the chunks are written). */
  readonly head: Omit<AssignmentMapHead, 'chunks'> & {
    chunks: Pick<AssignmentMapHead['chunks'], 'digests' | 'owners'>;
  };
  /** The chunk values in index order, each at most `chunkBytes` bytes. */
  readonly chunks: readonly string[];
}

/**
 * Splits `map` into chunks of at most `chunkBytes` bytes: entries `[chamber, owner, lastMovedAt]`
 * sorted by owner, then chamber, so each defender's chambers are contiguous (the head names each
 * chunk's first and last owner).
 *
 * @throws RangeError when the map needs more than MAX_MAP_CHUNKS chunks or `chunkBytes` cannot hold one entry.
 * @throws InvalidMessageError when an entry is not valid (readers would reject the map: nothing is published).
 */
export function encodeMap(map: AssignmentMap, chunkBytes = DEFAULT_CHUNK_BYTES): EncodedMap {
  const byOwner = new Map<string, string[]>();
  for (const [chamber, owner] of Object.entries(map.assignments)) {
    const list = byOwner.get(owner);
    if (list) list.push(chamber);
    else byOwner.set(owner, [chamber]);
  }
  // Scoped readers (decodeOwnerChunks) check the entries they find against these counts.
  for (const [id, info] of Object.entries(map.defenderInfo)) {
    const n = byOwner.get(id)?.length ?? 0;
    if (info.chambers !== n)
      throw new InvalidMessageError('assignment map', `not published: defenderInfo.${id}.chambers is ${info.chambers}, it owns ${n}`);
  }
  const entries: [string, string][] = [];
  for (const [owner, chambers] of [...byOwner].sort(([a], [b]) => (a < b ? -1 : 1))) {
    for (const chamber of chambers.sort()) entries.push([chamber, owner]);
  }
  const chunks: string[] = [];
  const owners: [string, string][] = [];
  const open = (index: number) =>
    `{"schema":2,"version":${map.version},"fencingToken":${JSON.stringify(map.fencingToken)},"index":${index},"entries":[`;
  let body: string[] = [];
  let bytes = 0;
  let first = '';
  let last = '';
  const close = () => {
    chunks.push(`${open(chunks.length)}${body.join(',')}]}`);
    owners.push([first, last]);
    body = [];
  };
  for (const [chamber, owner] of entries) {
    const moved = map.lastMovedAt[chamber] ?? 0;
    const problem = chunkEntryProblem([chamber, owner, moved]);
    if (problem !== null)
      throw new InvalidMessageError('assignment map', `not published: ${chamber}: ${problem}`);
    // Valid keys and ids are ASCII without characters JSON escapes: the text is the JSON, its length the bytes.
    const e = `["${chamber}","${owner}",${moved}]`;
    const size = e.length + 1;
    if (body.length > 0 && bytes + size > chunkBytes) close();
    if (body.length === 0) {
      bytes = Buffer.byteLength(open(chunks.length)) + 2;
      first = owner;
      if (bytes + size > chunkBytes)
        throw new RangeError(`chunk size ${chunkBytes} bytes cannot hold the entry of ${chamber}`);
    }
    body.push(e);
    bytes += size;
    last = owner;
  }
  if (body.length > 0) close();
  if (chunks.length > MAX_MAP_CHUNKS)
    throw new RangeError(`map v${map.version} needs ${chunks.length} chunks, more than ${MAX_MAP_CHUNKS}`);
  const { assignments: _a, lastMovedAt: _l, schema: _s, ...summary } = map;
  return { head: { ...summary, schema: 2, chunks: { digests: chunks.map(valueDigest), owners } }, chunks };
}

/**
 * Assembles the map a head describes from its chunk values (read by the exact revisions the head
 * names). Every chunk must carry the head's version, token and its index, and hash to the head's
 * digest: a reader never returns a map mixed from two publications.
 *
 * @throws InvalidMessageError when a chunk does not belong to the head or the result is not a valid map.
 */
export function decodeMap(head: AssignmentMapHead, chunkValues: readonly Uint8Array[]): AssignmentMap {
  const bad = badChunk(head);
  if (chunkValues.length !== head.chunks.digests.length)
    throw bad(`${chunkValues.length} chunks for ${head.chunks.digests.length}`);
  const assignments: Record<string, string> = {};
  const lastMovedAt: Record<string, number> = {};
  let count = 0;
  chunkValues.forEach((value, i) => {
    for (const [chamber, owner, moved] of verifiedChunk(head, i, value).entries) {
      if (chamber in assignments) throw bad(`chamber ${chamber} appears twice`);
      if (!(owner in head.defenderInfo)) throw bad(`owner ${owner} of ${chamber} missing from defenderInfo`);
      assignments[chamber] = owner;
      if (moved > 0) lastMovedAt[chamber] = moved;
      count++;
    }
  });
  if (count !== head.chamberCount) throw bad(`${count} assignments for chamberCount ${head.chamberCount}`);
  const { chunks: _c, schema: _s, ...summary } = head;
  return { schema: 1, ...summary, assignments, lastMovedAt };
}

/**
 * The indexes of the chunks that can hold `owner`'s entries: entries are sorted by owner, so its
 * chambers are in the chunks whose first and last owner enclose it (none when it owns nothing).
 */
export function chunksHolding(head: Pick<AssignmentMapHead, 'chunks' | 'defenderInfo'>, owner: string): number[] {
  if ((head.defenderInfo[owner]?.chambers ?? 0) === 0) return [];
  const out: number[] = [];
  head.chunks.owners.forEach(([first, last], i) => {
    if (first <= owner && owner <= last) out.push(i);
  });
  return out;
}

/**
 * The map a head describes, restricted to `owner`'s assignments and lastMovedAt (every other field
 * is the whole map's), from the chunks {@link chunksHolding} names, each checked like
 * {@link decodeMap} checks it. The publisher refuses a map whose `defenderInfo` counts differ from
 * its assignments (encodeMap), so finding exactly `defenderInfo[owner].chambers` entries proves none
 * is missing.
 *
 * @throws InvalidMessageError when a chunk does not belong to the head, is not sorted by owner, or
 *   `owner`'s entries do not add up to its count.
 */
export function decodeOwnerChunks(
  head: AssignmentMapHead,
  owner: string,
  chunks: readonly { index: number; value: Uint8Array }[],
): AssignmentMap {
  const bad = badChunk(head);
  const wanted = chunksHolding(head, owner);
  if (chunks.length !== wanted.length || chunks.some((c, k) => c.index !== wanted[k]))
    throw bad(`chunks ${chunks.map((c) => c.index).join(',')} read for ${owner}, it needs ${wanted.join(',')}`);
  const assignments: Record<string, string> = {};
  const lastMovedAt: Record<string, number> = {};
  let previous = '';
  for (const { index, value } of chunks) {
    for (const [chamber, o, moved] of verifiedChunk(head, index, value).entries) {
      if (o < previous) throw bad(`chunk ${index} is not sorted by owner (${o} after ${previous})`);
      previous = o;
      if (o !== owner) continue;
      if (chamber in assignments) throw bad(`chamber ${chamber} appears twice`);
      assignments[chamber] = owner;
      if (moved > 0) lastMovedAt[chamber] = moved;
    }
    previous = '';
  }
  const expected = head.defenderInfo[owner]?.chambers ?? 0;
  const found = Object.keys(assignments).length;
  if (found !== expected) throw bad(`${found} assignments of ${owner} for defenderInfo.chambers ${expected}`);
  const { chunks: _c, schema: _s, ...summary } = head;
  return { schema: 1, ...summary, assignments, lastMovedAt };
}

function badChunk(head: AssignmentMapHead): (reason: string) => InvalidMessageError {
  return (reason) =>
    new InvalidMessageError('assignment map', `v${head.version} (token ${head.fencingToken}): ${reason}`);
}

/** Chunk `i` of `head`, parsed, once its digest, version, token and index are the head's. */
function verifiedChunk(head: AssignmentMapHead, i: number, value: Uint8Array): AssignmentMapChunk {
  const bad = badChunk(head);
  if (valueDigest(value) !== head.chunks.digests[i]) throw bad(`chunk ${i} does not match the head's digest`);
  const c = parseAssignmentMapChunk(value);
  if (c.version !== head.version || c.fencingToken !== head.fencingToken || c.index !== i) {
    throw bad(`chunk ${i} was written for v${c.version} (token ${c.fencingToken}) index ${c.index}`);
  }
  return c;
}
