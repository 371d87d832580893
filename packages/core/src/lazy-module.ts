/**
 * A dependency loaded on first use, once: an optional peer, or a native add-on that must not load
 * when the package that needs it is imported (on a platform it has no build for, importing would
 * throw). The caller passes its own `require`, so the module resolves from the caller's package.
 */
import { UnsupportedError } from './errors';

/**
 * A function that loads the module with `load` on its first call and returns it on every call.
 * A failed load is not remembered (the next call tries again).
 * @param what - who could not load what, for the error: `@allot/cuda could not load koffi (its FFI)`.
 * @throws UnsupportedError (from the returned function) naming `what`, the platform and the cause.
 */
export function lazyModule<T>(load: () => T, what: string): () => T {
  let loaded: { readonly module: T } | undefined;
  return () => {
    if (loaded === undefined) {
      try {
        loaded = { module: load() };
      } catch (error) {
        const platform =
          typeof process === 'undefined' ? 'this platform' : `${process.platform}-${process.arch}`;
        const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
        throw new UnsupportedError(`${what} on ${platform}: ${reason}`, { cause: error });
      }
    }
    return loaded.module;
  };
}
