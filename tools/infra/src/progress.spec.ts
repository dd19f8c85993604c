import { mavenDownload } from './cassandra';
import { ProgressLine, remainingMs, shortDuration, textBar, type ProgressStream } from './progress';

/** A stream that records what is written, as a terminal (`isTTY`) or a pipe. */
function stream(isTTY: boolean, columns = 40): ProgressStream & { text: () => string } {
  const chunks: string[] = [];
  return { isTTY, columns, write: (c: string) => chunks.push(c), text: () => chunks.join('') };
}

describe('ProgressLine', () => {
  it('on a terminal rewrites one line (cut to the width), skips repeats and leaves the last line behind', () => {
    const out = stream(true, 12);
    const p = new ProgressLine(out);
    expect(p.mode).toBe('bar');
    p.update('a 1');
    p.update('a 1');
    p.update('a 2 and a lot more');
    p.done('finished');
    expect(out.text()).toBe('\r\x1b[2Ka 1\r\x1b[2Ka 2 and a l\r\x1b[2Kfinished\n');
  });

  it('in a pipe prints a plain line at most every interval (or when forced), and always the last one', () => {
    const out = stream(false);
    let t = 0;
    const p = new ProgressLine(out, 'auto', 10_000, () => t);
    expect(p.mode).toBe('plain');
    p.update('first');
    t = 5_000;
    p.update('too soon');
    p.update('forced', true);
    t = 16_000;
    p.update('next');
    p.done('done');
    expect(out.text()).toBe('first\nforced\nnext\ndone\n');
  });

  it('a log line on a terminal clears the bar, prints and draws the bar again; `none` prints nothing', () => {
    const out = stream(true);
    const p = new ProgressLine(out);
    p.update('bar');
    p.log('message');
    expect(out.text()).toBe('\r\x1b[2Kbar\r\x1b[2Kmessage\nbar');
    const quiet = stream(true);
    const q = new ProgressLine(quiet, 'none');
    q.update('x');
    q.done('y');
    expect(quiet.text()).toBe('');
  });
});

describe('progress helpers', () => {
  it('shortDuration, textBar and remainingMs', () => {
    expect([shortDuration(12_400), shortDuration(185_000), shortDuration(3_720_000)]).toEqual(['12s', '3m05s', '1h02m']);
    expect(textBar(0.5, 4)).toBe('▕██░░▏');
    expect(textBar(Number.NaN, 2)).toBe('▕░░▏');
    expect(textBar(3, 2)).toBe('▕██▏');
    expect(remainingMs(25, 100, 10_000)).toBe(30_000);
    expect(remainingMs(0, 100, 10_000)).toBeUndefined();
    expect(remainingMs(100, 100, 10_000)).toBe(0);
  });
});

describe("Cassandra's first download: Maven's download lines", () => {
  it('reads the artifact and its size from a "Downloaded from" line, nothing else', () => {
    expect(mavenDownload('[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/cassandra/cassandra-all/5.0.4/cassandra-all-5.0.4.jar (9.3 MB at 12 MB/s)')).toEqual({
      url: 'https://repo.maven.apache.org/maven2/org/apache/cassandra/cassandra-all/5.0.4/cassandra-all-5.0.4.jar',
      bytes: 9.3e6,
    });
    expect(mavenDownload('Downloaded from central: https://x/y.pom (1,024 B at 5 kB/s)')?.bytes).toBe(1024);
    expect(mavenDownload('[INFO] Downloading from central: https://x/y.jar')).toBeUndefined();
    expect(mavenDownload('[INFO] BUILD SUCCESS')).toBeUndefined();
  });
});
