/**
 * koffi, loaded on first use: requiring it loads a native add-on, which must not happen when the
 * package is imported (on a platform koffi has no build for, importing would throw). Only the files
 * in this folder touch koffi, and only through this function.
 */
import { createRequire } from 'node:module';
import { UnsupportedError } from '@allot/core';
import type * as Koffi from 'koffi';

export type KoffiModule = typeof Koffi;
export type { IKoffiCType, IKoffiLib, KoffiFunction } from 'koffi';

let cached: KoffiModule | undefined;

/** The koffi module. @throws UnsupportedError when its native add-on cannot load here. */
export function koffi(): KoffiModule {
  if (cached === undefined) {
    try {
      cached = createRequire(import.meta.url)('koffi') as KoffiModule;
    } catch (error) {
      throw new UnsupportedError(
        `@allot/cuda could not load koffi (its FFI) on ${process.platform}-${process.arch}: ` +
          `${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
        { cause: error },
      );
    }
  }
  return cached;
}
