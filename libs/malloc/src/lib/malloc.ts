import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The addon's file name: built into `libs/malloc/native/build/Release/`, shipped beside the defender's `main.js`. */
export const NATIVE_FILE = 'malloc.node';

/**
 * Where `npm run build:native` puts the addon, seen from this lib's source (running from source:
 * tests, `register.js` scripts). A bundled app passes the copy beside its `main.js` first.
 */
export function sourceBuildPath(): string {
  return join(__dirname, '..', '..', 'native', 'build', 'Release', NATIVE_FILE);
}

/** glibc's `mallinfo2()` counters, in bytes. */
export interface MallocInfo {
  /** The main heap (brk) and other arenas' heaps, resident or not. */
  readonly heapBytes: number;
  /** Blocks allocated with mmap (large allocations; freed straight back to the kernel). */
  readonly mmappedBytes: number;
  /** Bytes of the heaps handed out and not yet freed. */
  readonly inUseBytes: number;
  /** Bytes of the heaps free for reuse; `trim()` returns their whole pages to the kernel. */
  readonly freeBytes: number;
  /** Free bytes at the main heap's top, which glibc would give back on its own. */
  readonly releasableTopBytes: number;
}

/** glibc's allocator controls (see native/malloc.c). */
export interface Malloc {
  /** False on a C library without malloc_trim (musl, macOS): `trim()` then does nothing. */
  readonly supported: boolean;
  /** `malloc_trim(0)`: returns every whole free page to the kernel; true when some were. */
  trim(): boolean;
  /** The allocator's counters; undefined where unsupported. */
  info(): MallocInfo | undefined;
}

/** The addon was not found at any of the given paths, or did not load. */
export class MallocUnavailableError extends Error {
  override readonly name = 'MallocUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

interface Binding {
  supported(): boolean;
  trim(): boolean;
  info(): MallocInfo | undefined;
}

/**
 * Loads the addon from the first path that exists (`process.dlopen`, which bundlers leave alone).
 * @throws MallocUnavailableError naming the paths tried, or with the loader's error as cause.
 */
export function loadMalloc(paths: readonly string[]): Malloc {
  const path = paths.find((p) => existsSync(p));
  if (path === undefined) throw new MallocUnavailableError(`${NATIVE_FILE} not found (tried ${paths.join(', ')}); build it with \`npm run build:native\``);
  const mod = { exports: {} as Partial<Binding> };
  try {
    process.dlopen(mod, path);
  } catch (err) {
    throw new MallocUnavailableError(`${path} did not load: ${(err as Error).message}`, { cause: err });
  }
  const b = mod.exports;
  if (typeof b.supported !== 'function' || typeof b.trim !== 'function' || typeof b.info !== 'function') {
    throw new MallocUnavailableError(`${path} is not the malloc addon (missing supported/trim/info); rebuild it with \`npm run build:native\``);
  }
  const binding = b as Binding;
  return {
    supported: binding.supported(),
    trim: () => binding.trim(),
    info: () => binding.info(),
  };
}
