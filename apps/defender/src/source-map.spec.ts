import { readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { join } from 'node:path';

/**
 * The built bundle's source map (`nx build defender`, which this project's tests depend on): the
 * image runs `node --enable-source-maps`, and Node holds every loaded map in the heap, expanded
 * mapping by mapping at the first stack trace. The production map therefore has one mapping per
 * generated line and no sources' text (webpack.preset.js; ADR 0014), and must
 * still name the TypeScript file and line of any code in the bundle.
 */
describe('the defender bundle source map', () => {
  const REPO = join(__dirname, '..', '..', '..');
  const dist = join(REPO, 'dist', 'apps', 'defender');
  const bundle = readFileSync(join(dist, 'main.js'), 'utf8').split('\n');
  const payload = JSON.parse(readFileSync(join(dist, 'main.js.map'), 'utf8')) as SourceMapPayload;
  const map = new SourceMap(payload);

  it('has one mapping per generated line and no sources text', () => {
    expect(payload.sourcesContent ?? []).toEqual([]);
    // A line-level map: segments separated by ';' (lines) only, never ',' (several on one line).
    expect(payload.mappings).not.toContain(',');
    expect(payload.mappings.length).toBeGreaterThan(bundle.length);
  });

  it.each([
    ['libs/nest-common/src/lib/store/store-env.ts', 'must be sqlite or cassandra'],
    ['libs/pipeline/src/lib/worker/run-attempt.ts', 'declared exceed the limit of'],
    ['apps/defender/src/app/memory/thread-heap.service.ts', 'THREAD_HEAP_INTERVAL_MS = 5'],
  ])('maps code from %s to its TypeScript file and line', (file, needle) => {
    const generatedLine = bundle.findIndex((l) => l.includes(needle));
    expect(generatedLine).toBeGreaterThanOrEqual(0);
    const originalLine = readFileSync(join(REPO, file), 'utf8').split('\n').findIndex((l) => l.includes(needle));
    expect(originalLine).toBeGreaterThanOrEqual(0);
    const entry = map.findEntry(generatedLine, bundle[generatedLine]!.indexOf(needle));
    expect('originalSource' in entry && { source: entry.originalSource.replace(/^webpack:\/\/\/(\.\.\/\.\.\/|\.\/)/, ''), line: entry.originalLine }).toEqual({
      source: file.startsWith('apps/defender/') ? file.slice('apps/defender/'.length) : file,
      line: originalLine,
    });
  });
});
