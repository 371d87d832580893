/**
 * koffi, loaded on first use: requiring it loads a native add-on, which must not happen when the
 * package is imported (on a platform koffi has no build for, importing would throw). Only the files
 * in this folder touch koffi, and only through this function.
 */
import { createRequire } from 'node:module';
import { lazyModule } from '@allot/core';
import type * as Koffi from 'koffi';

export type KoffiModule = typeof Koffi;
export type { IKoffiCType, IKoffiLib, KoffiFunction } from 'koffi';

/** The koffi module. @throws UnsupportedError when its native add-on cannot load here. */
export const koffi: () => KoffiModule = lazyModule(
  () => createRequire(import.meta.url)('koffi') as KoffiModule,
  '@allot/cuda could not load koffi (its FFI)',
);
