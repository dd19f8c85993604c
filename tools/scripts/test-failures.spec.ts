import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { failureLine, watchLines } from './test-failures';

describe('failed tests repeated at the end of npm test', () => {
  it.each([
    ['election-agent:     ✕ a standby leads (3012 ms)', true],
    ['election-agent:   ● election agent › a standby leads', true],
    ['election-agent: \u001b[0m\u001b[7m\u001b[1m\u001b[31m FAIL \u001b[39m\u001b[22m\u001b[27m\u001b[0m apps/election-agent/src/election.int.spec.ts', true],
    ['store:   ● Test suite failed to run', true],
    ['e2e: Jest did not exit one second after the test run has completed.', true],
    ['defender:     ✓ claims its ID (12 ms)', false],
    ['defender:   ● Console', false],
    ['defender: \u001b[0m\u001b[7m\u001b[1m\u001b[32m PASS \u001b[39m apps/defender/src/main.int.spec.ts', false],
    ['[test-all] finished with code 0 in 1200 s', false],
  ])('%j -> %s', (line, expected) => {
    expect(failureLine(line)).toBe(expected);
  });

  it('forwards every byte and keeps the failure lines, even when a chunk splits a line or a character', () => {
    const from = new PassThrough();
    const to = new PassThrough();
    const failures: string[] = [];
    watchLines(from, to, failures);
    const text = 'a:     ✓ ok\na:     ✕ broken test\nb:   ● s › t\nrest';
    const bytes = Buffer.from(text, 'utf8');
    const cut = bytes.indexOf(Buffer.from('✕')) + 1; // inside the three bytes of ✕
    from.write(bytes.subarray(0, cut));
    from.write(bytes.subarray(cut));
    expect(to.read()?.toString('utf8')).toBe(text);
    expect(failures).toEqual(['a:     ✕ broken test', 'b:   ● s › t']);
  });

  it('with a prefix, writes every line whole with it (the last one at the end) and keeps its failure lines', async () => {
    const from = new PassThrough();
    const to = new PassThrough();
    const failures: string[] = [];
    watchLines(from, to, failures, 'chaos: ');
    from.write('  ✓ ok\n  ✕ bro');
    from.write('ken\nFAIL src/x.spec.ts');
    const ended = once(from, 'end');
    from.end();
    await ended;
    expect(to.read()?.toString('utf8')).toBe('chaos:   ✓ ok\nchaos:   ✕ broken\nchaos: FAIL src/x.spec.ts\n');
    expect(failures).toEqual(['chaos:   ✕ broken', 'chaos: FAIL src/x.spec.ts']);
  });
});
