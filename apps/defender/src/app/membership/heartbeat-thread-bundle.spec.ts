import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The built heartbeat thread (`nx build defender`, which this project's tests depend on) is an
 * isolate of its own: what it loads stays in its heap. Loading zod (the contracts' schemas) there
 * grew that heap from about 18 to 29 MB committed under the image's flags (ADR 0014), for a thread
 * that only writes a heartbeat and refreshes a claim. It loads NATS and Node's own modules, nothing else.
 */
describe('the heartbeat thread bundle', () => {
  const bundle = readFileSync(join(__dirname, '..', '..', '..', '..', '..', 'dist', 'apps', 'defender', 'heartbeat-thread.js'), 'utf8');

  it('requires only the NATS client and Node built-ins (no zod, no schemas)', () => {
    const required = [...new Set([...bundle.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1] as string))].sort();
    expect(required.filter((m) => !m.startsWith('node:') && !m.startsWith('@nats-io/'))).toEqual([]);
    expect(required).toEqual(expect.arrayContaining(['@nats-io/kv', '@nats-io/transport-node']));
  });
});
