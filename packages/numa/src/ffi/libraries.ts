/**
 * Loading the native libraries, lazily: nothing here runs at import. libc is required (the C
 * library of the running process, found through the process itself first); libnuma is optional,
 * and when it is missing or skipped every NUMA call goes through raw system calls instead.
 *
 * Search order, each overridable by an environment variable:
 * - libc: `ALLOT_LIBC_PATH`, then the symbols of the process itself, then `libc.so.6`, `libc.so`.
 * - libnuma: `ALLOT_LIBNUMA_PATH`, then `libnuma.so.1`, `libnuma.so`; skipped entirely when
 *   `ALLOT_NUMA_NO_LIBNUMA=1` or the caller asks for `libnuma: false`.
 */
import { UnsupportedError } from '@allot/core';
import { type IKoffiLib, koffi } from './koffi';

/** Environment variable naming the C library to load. */
export const LIBC_PATH_ENV = 'ALLOT_LIBC_PATH';
/** Environment variable naming libnuma to load. */
export const LIBNUMA_PATH_ENV = 'ALLOT_LIBNUMA_PATH';
/** Environment variable that, set to `1`, skips libnuma and uses raw system calls. */
export const NO_LIBNUMA_ENV = 'ALLOT_NUMA_NO_LIBNUMA';

export type Env = Readonly<Record<string, string | undefined>>;

/** What loading a library found: the library, or every place searched and why each failed. */
export interface LoadResult {
  readonly library: IKoffiLib | null;
  /** The path that loaded (`(process)` for the process's own symbols). */
  readonly path: string | null;
  /** Every candidate tried, with the reason it failed. */
  readonly searched: readonly string[];
}

function tryLoad(candidates: readonly (string | null)[]): LoadResult {
  const searched: string[] = [];
  for (const candidate of candidates) {
    try {
      const library = koffi().load(candidate);
      return { library, path: candidate ?? '(process)', searched };
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
      searched.push(`${candidate ?? '(process)'}: ${reason}`);
    }
  }
  return { library: null, path: null, searched };
}

let libcResult: LoadResult | undefined;
let libcKey: string | undefined;

/** The C library; throws `UnsupportedError` naming every path searched when none loads. */
export function loadLibc(env: Env): IKoffiLib {
  const override = env[LIBC_PATH_ENV];
  const key = override ?? '';
  if (libcResult === undefined || libcKey !== key) {
    libcResult = tryLoad(override ? [override] : [null, 'libc.so.6', 'libc.so']);
    libcKey = key;
  }
  if (libcResult.library === null) {
    throw new UnsupportedError(
      `@allot/numa could not load the C library. Searched:\n  ${libcResult.searched.join('\n  ')}\n` +
        `Set ${LIBC_PATH_ENV} to the path of libc (for example /lib/x86_64-linux-gnu/libc.so.6).`,
    );
  }
  return libcResult.library;
}

const libnumaResults = new Map<string, LoadResult>();

/** libnuma, or a result with `library: null` and the paths searched when it is not installed. */
export function loadLibnuma(env: Env): LoadResult {
  const override = env[LIBNUMA_PATH_ENV];
  const key = override ?? '';
  let result = libnumaResults.get(key);
  if (result === undefined) {
    result = tryLoad(override ? [override] : ['libnuma.so.1', 'libnuma.so']);
    libnumaResults.set(key, result);
  }
  return result;
}
