/**
 * How the store gives back the memory of ArrayBuffers it created and is done with (trace arrays,
 * copies of trace chunks), instead of leaving them to the garbage collector.
 *
 * A buffer that outlives two young-generation collections is promoted, and V8 frees a promoted
 * buffer's memory only with a full collection, which it starts once external memory has grown by
 * tens of MB. A process that can detach buffers natively (the defender, through libs/malloc)
 * installs {@link setArrayBufferDetacher}: a detached buffer's memory is freed at once. Without one,
 * {@link releaseArrayBuffer} moves the memory to a new, unreferenced buffer (a transfer), which the
 * next young collection frees.
 */
export type ArrayBufferDetacher = (buffer: ArrayBuffer) => unknown;

let detacher: ArrayBufferDetacher | undefined;

/** Installs (or, with undefined, removes) the process's native detacher. */
export function setArrayBufferDetacher(fn: ArrayBufferDetacher | undefined): void {
  detacher = fn;
}

/**
 * Frees a buffer the caller solely owns: at once with a native detacher, else at the next young
 * collection. Its views read as empty afterwards. A detached buffer is left alone.
 */
export function releaseArrayBuffer(buffer: ArrayBuffer): void {
  if (isDetached(buffer)) return;
  if (detacher) detacher(buffer);
  else structuredClone(buffer, { transfer: [buffer] });
}

/**
 * Frees a short-lived buffer the caller solely owns at once, if a native detacher is installed;
 * otherwise does nothing (it dies young anyway, and a transfer would cost more than it saves).
 */
export function releaseYoungArrayBuffer(buffer: ArrayBuffer): void {
  if (detacher && !isDetached(buffer)) detacher(buffer);
}

/** A detached buffer has no bytes (nor has a new empty one, which is harmless to skip). */
function isDetached(buffer: ArrayBuffer): boolean {
  return buffer.byteLength === 0;
}
