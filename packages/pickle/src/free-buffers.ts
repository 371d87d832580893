/**
 * Typed arrays' memory handed back as soon as the reader is done with them (a snapshot's memo, its
 * entries' columns once the trace is built): browser-safe, no Node module.
 */

/**
 * Hands the memory of `buffers` back now: they are moved (detached) into a copy nothing holds,
 * which the collector's next young-generation pass frees, within moments. Dropped as they are, old
 * buffers (a snapshot's memo: 50 MB and more, in chunks) stay held until a full pass, while what
 * comes next (the trace's build, the replay) allocates beside them. Where `structuredClone` cannot
 * move them, they go the usual way.
 */
export function freeBuffers(buffers: readonly ArrayBufferLike[]): void {
  if (buffers.length === 0 || typeof structuredClone !== 'function') return;
  try {
    structuredClone(buffers, { transfer: buffers as ArrayBuffer[] });
  } catch {
    // Not transferable here (a SharedArrayBuffer, an old runtime): the collector frees them.
  }
}
