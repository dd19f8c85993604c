import fc from 'fast-check';
import {
  bigIntToHash64,
  EmptyRingError,
  HashRing,
  hash64ToBigInt,
  InvalidHashConfigError,
  xxh64,
} from '../index';

const M64 = (1n << 64n) - 1n;
const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `defender-${from + i}`);

/** Brute-force reference: all points as BigInt, first point >= h, wrapping to the smallest. */
function referenceOwner(nodes: string[], vnodes: number, h: bigint): string {
  const pts: Array<[bigint, string]> = [];
  for (const id of nodes) for (let v = 0; v < vnodes; v++) pts.push([xxh64(`${id}-vnode-${v}`), id]);
  pts.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : 1));
  return (pts.find(([p]) => p >= h) ?? pts[0]!)[1];
}

describe('HashRing', () => {
  it('defaults to 200 virtual nodes and accepts 150-500', () => {
    expect(new HashRing().vnodes).toBe(200);
    expect(new HashRing({ vnodes: 150 }).vnodes).toBe(150);
    expect(new HashRing({ vnodes: 500 }).vnodes).toBe(500);
    for (const vnodes of [149, 501, 0, 200.5, Number.NaN]) {
      expect(() => new HashRing({ vnodes })).toThrow(InvalidHashConfigError);
    }
  });

  it('places node points at xxHash64("<id>-vnode-<v>"), sorted', () => {
    const ring = new HashRing({ vnodes: 150 });
    ring.setNodes(['defender-5']);
    const points = ring.points();
    expect(points).toHaveLength(150);
    const expected = Array.from({ length: 150 }, (_, v) => xxh64(`defender-5-vnode-${v}`)).sort((a, b) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    expect(points.map((p) => hash64ToBigInt(p.hash))).toEqual(expected);
    expect(new Set(points.map((p) => p.owner))).toEqual(new Set(['defender-5']));
  });

  it('looks up the first point clockwise, with wrap-around past the largest point', () => {
    const ring = new HashRing();
    ring.setNodes(ids(3));
    const pts = ring.points();
    const first = pts[0]!;
    const last = pts[pts.length - 1]!;
    // Exactly on a point: that point's owner.
    expect(ring.ownerOf(last.hash)).toBe(last.owner);
    // Past the largest point: wraps to the smallest.
    expect(ring.ownerOf(bigIntToHash64(hash64ToBigInt(last.hash) + 1n))).toBe(first.owner);
    expect(ring.ownerOf(bigIntToHash64(M64))).toBe(first.owner);
    // Before the smallest point: the smallest.
    expect(ring.ownerOf(bigIntToHash64(0n))).toBe(first.owner);
    // Between two points: the later one.
    const mid = pts[10]!;
    expect(ring.ownerOf(bigIntToHash64(hash64ToBigInt(pts[9]!.hash) + 1n))).toBe(mid.owner);
  });

  it('agrees with a brute-force reference for arbitrary positions and keys', () => {
    const nodes = ids(7);
    const ring = new HashRing({ vnodes: 150 });
    ring.setNodes(nodes);
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: M64 }), (h) => {
        expect(ring.ownerOf(bigIntToHash64(h))).toBe(referenceOwner(nodes, 150, h));
      }),
      { seed: 3001, numRuns: 500 },
    );
    for (let i = 0; i < 200; i++) {
      const key = `tool${i}:chamber${i % 4}`;
      expect(ring.ownerOfKey(key)).toBe(referenceOwner(nodes, 150, xxh64(key)));
    }
  });

  it('is a function of the node set, not of the order or history of changes', () => {
    const a = new HashRing();
    a.setNodes(ids(12));
    const b = new HashRing();
    b.setNodes(ids(12).reverse());
    const c = new HashRing();
    c.setNodes(ids(5));
    c.setNodes(ids(20));
    c.removeNode('defender-15');
    c.setNodes(ids(12));
    c.addNode('defender-3');
    expect(b.points()).toEqual(a.points());
    expect(c.points()).toEqual(a.points());
    expect(c.nodes).toEqual([...ids(12)].sort());
  });

  it('hashes only nodes it has never seen: a change re-hashes what changed, a rejoin nothing', () => {
    const ring = new HashRing();
    expect(ring.setNodes(ids(30)).hashed).toHaveLength(30);
    const join = ring.setNodes(ids(31));
    expect(join).toEqual({ added: ['defender-30'], removed: [], hashed: ['defender-30'] });
    const crash = ring.setNodes(ids(31).filter((id) => id !== 'defender-7'));
    expect(crash).toEqual({ added: [], removed: ['defender-7'], hashed: [] });
    const rejoin = ring.setNodes(ids(31));
    expect(rejoin).toEqual({ added: ['defender-7'], removed: [], hashed: [] });
    expect(ring.size).toBe(31 * 200);
  });

  it('moves only the keys of a removed node, and only keys to an added node', () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `tool${Math.floor(i / 4)}:chamber${(i % 4) + 1}`);
    const ring = new HashRing();
    ring.setNodes(ids(30));
    const before = keys.map((k) => ring.ownerOfKey(k));
    ring.removeNode('defender-11');
    const afterRemove = keys.map((k) => ring.ownerOfKey(k));
    keys.forEach((_, i) => {
      if (before[i] !== 'defender-11') expect(afterRemove[i]).toBe(before[i]);
      else expect(afterRemove[i]).not.toBe('defender-11');
    });
    ring.setNodes(ids(31));
    const afterAdd = keys.map((k) => ring.ownerOfKey(k));
    keys.forEach((_, i) => {
      if (afterAdd[i] !== 'defender-30' && before[i] !== 'defender-11') expect(afterAdd[i]).toBe(before[i]);
    });
  });

  it("spreads keys by count within the seeds' expectations (200 vnodes, 30 nodes, 5,000 keys)", () => {
    const ring = new HashRing();
    ring.setNodes(ids(30));
    const counts = new Map<string, number>();
    for (let i = 0; i < 5000; i++) {
      const owner = ring.ownerOfKey(`tool${Math.floor(i / 4)}:chamber${(i % 4) + 1}`);
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    expect(counts.size).toBe(30);
    const avg = 5000 / 30;
    // 200 vnodes keep each node's arc within roughly +-20% of the mean (7% relative std. dev.).
    for (const c of counts.values()) {
      expect(c).toBeGreaterThan(avg * 0.7);
      expect(c).toBeLessThan(avg * 1.3);
    }
  });

  it('rejects duplicate and empty ids without changing the ring', () => {
    const ring = new HashRing();
    ring.setNodes(ids(2));
    expect(() => ring.setNodes(['defender-0', 'defender-0'])).toThrow(InvalidHashConfigError);
    expect(() => ring.setNodes([''])).toThrow(InvalidHashConfigError);
    expect(ring.nodes).toEqual(ids(2));
  });

  it('throws EmptyRingError on lookup without nodes', () => {
    const ring = new HashRing();
    expect(() => ring.ownerOfKey('tool1:chamber1')).toThrow(EmptyRingError);
    ring.setNodes(ids(1));
    expect(ring.ownerOfKey('tool1:chamber1')).toBe('defender-0');
    ring.setNodes([]);
    expect(() => ring.ownerOf({ hi: 0, lo: 0 })).toThrow(EmptyRingError);
  });
});
