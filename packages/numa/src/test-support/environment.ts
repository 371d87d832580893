/** What the machine running the tests allows, so tests exercise what they can and say why not. */
import { numaNative } from '../ffi/native';
import { hasIpcLock, lockedBytes } from '../process-status';

/** Both NUMA backends: libnuma (when installed) and raw system calls. */
export const BACKENDS = [
  { name: 'libnuma', libnuma: true },
  { name: 'raw system calls', libnuma: false },
] as const;

/** Whether this process may page-lock `bytes` more. */
export function canLock(bytes: number): boolean {
  if (hasIpcLock()) return true;
  return lockedBytes() + bytes <= numaNative().memlockLimit().soft;
}

export const KiB = 1024;
export const MiB = 1024 * 1024;
