/**
 * How the store gives back the memory of ArrayBuffers it created and is done with (copies of trace
 * chunks, trace buffers not pooled), instead of leaving them to the garbage collector.
 *
 * A buffer that outlives two young-generation collections is promoted, and V8 frees a promoted
 * buffer's memory only with a full collection, which it starts once external memory has grown by
 * tens of MB. A transfer to zero length (ES2024 `ArrayBuffer.prototype.transfer`) detaches the
 * buffer, and V8 frees the backing store of a detached buffer at once: no collection, no native code.
 */
import { freeArrayBuffer } from './trace-buffer-pool';

/**
 * Frees a buffer the caller solely owns, now. Its views read as empty afterwards. A detached buffer
 * is left alone; one that cannot be detached (Node's shared Buffer pool) is left to the collector.
 */
export function releaseArrayBuffer(buffer: ArrayBuffer): void {
  freeArrayBuffer(buffer);
}

/**
 * Frees the memory of a Buffer the store got from a driver and has copied out of, when the Buffer
 * is the whole of its ArrayBuffer (a slice of a larger one, e.g. a network frame, is left alone).
 */
export function releaseDriverBuffer(data: Buffer): void {
  if (data.byteLength > 0 && data.byteOffset === 0 && data.buffer.byteLength === data.byteLength) freeArrayBuffer(data.buffer as ArrayBuffer);
}
