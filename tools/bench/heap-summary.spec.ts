import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { summarize } from './heap-summary';

/** A small Node process that holds 1,234 `HeapSummaryMarker` objects writes its heap snapshot to `file`. */
function snapshotOfSmallProcess(file: string): void {
  const program = `
    class HeapSummaryMarker { constructor(p) { this.payload = p; } }
    globalThis.held = { markers: Array.from({ length: 1234 }, (_, i) => new HeapSummaryMarker([i, i + 1, i + 2])) };
    require('node:v8').writeHeapSnapshot(${JSON.stringify(file)});
  `;
  execFileSync(process.execPath, ['-e', program], { stdio: 'ignore' });
}

describe('heap-summary', () => {
  it('counts the objects of a real snapshot by constructor and by what holds them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'heap-summary-'));
    const held = { markers: { length: 1234 } };
    try {
      const file = join(dir, 'x.heapsnapshot');
      snapshotOfSmallProcess(file);
      const s = summarize(readFileSync(file));
      const markers = s.byName.find((g) => g.type === 'object' && g.name === 'HeapSummaryMarker');
      expect(markers?.count).toBe(held.markers.length);
      expect(markers?.bytes).toBeGreaterThan(0);
      expect(s.total).toBe(s.byType.reduce((t, g) => t + g.bytes, 0));
      expect(s.nodes).toBe(s.byType.reduce((n, g) => n + g.count, 0));
      // Each marker is held by the array's elements, which the object's `markers` field holds.
      const owners = s.byOwner.filter((g) => g.name.startsWith('HeapSummaryMarker <- Array.[element]'));
      expect(owners.reduce((n, g) => n + g.count, 0)).toBe(held.markers.length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a file that is no heap snapshot', () => {
    expect(() => summarize(Buffer.from('{"hello": 1}'))).toThrow(/not a heap snapshot/);
  });
});
