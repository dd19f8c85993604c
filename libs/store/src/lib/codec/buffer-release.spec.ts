import { releaseArrayBuffer, releaseYoungArrayBuffer, setArrayBufferDetacher } from './buffer-release';

afterEach(() => setArrayBufferDetacher(undefined));

/** Installs a detacher that detaches (by transfer) and records each buffer's size. */
function recordingDetacher(): number[] {
  const seen: number[] = [];
  setArrayBufferDetacher((b) => {
    seen.push(b.byteLength);
    structuredClone(b, { transfer: [b] });
  });
  return seen;
}

describe('releaseArrayBuffer', () => {
  it('without a native detacher, detaches by transfer (views read as empty)', () => {
    const a = new Float64Array(1000).fill(1);
    releaseArrayBuffer(a.buffer);
    expect(a.length).toBe(0);
    expect(a.buffer.byteLength).toBe(0);
    // Twice is harmless.
    expect(() => releaseArrayBuffer(a.buffer)).not.toThrow();
  });

  it('uses the installed detacher, once per buffer', () => {
    const seen = recordingDetacher();
    const a = new Uint8Array(4096);
    releaseArrayBuffer(a.buffer);
    releaseArrayBuffer(a.buffer);
    expect(seen).toEqual([4096]);
    expect(a.length).toBe(0);
  });
});

describe('releaseYoungArrayBuffer', () => {
  it('does nothing without a native detacher', () => {
    const a = new Uint8Array(4096);
    releaseYoungArrayBuffer(a.buffer);
    expect(a.length).toBe(4096);
  });

  it('detaches with one', () => {
    const seen = recordingDetacher();
    const a = new Uint8Array(4096);
    releaseYoungArrayBuffer(a.buffer);
    expect(seen).toEqual([4096]);
    expect(a.length).toBe(0);
  });
});
