import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { heapSnapshotNodeOptions, takeHeapSnapshot } from './observe';

describe('takeHeapSnapshot', () => {
  it("asks a running process for a heap snapshot by signal and moves the complete file where it is wanted", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heap-snapshot-'));
    // A process that serves /health/live like an app, started with the options the bench gives defenders.
    // It writes its port with process.stdout.write: console.log colours numbers under FORCE_COLOR (CI).
    const child = spawn(
      process.execPath,
      ['-e', "const s = require('node:http').createServer((q, r) => r.end('ok')).listen(0, '127.0.0.1', () => process.stdout.write(s.address().port + '\\n')); globalThis.keep = 'a string to find in the heap';"],
      { env: { ...process.env, NODE_OPTIONS: heapSnapshotNodeOptions(dir) }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const port = await new Promise<number>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
      expect(Number.isInteger(port)).toBe(true);
      const file = join(dir, 'taken.heapsnapshot');
      const bytes = await takeHeapSnapshot(child.pid!, dir, `http://127.0.0.1:${port}/health/live`, file);
      const text = readFileSync(file, 'utf8');
      expect(bytes).toBe(Buffer.byteLength(text));
      const snapshot = JSON.parse(text) as { snapshot: { node_count: number }; strings: string[] };
      expect(snapshot.snapshot.node_count).toBeGreaterThan(1000);
      expect(snapshot.strings).toContain('a string to find in the heap');
      expect(readdirSync(dir)).toEqual(['taken.heapsnapshot']);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
