/** Figures from `/proc/self/status` that explain a refused `mlock`. */
import { readFileSync } from 'node:fs';

/** Bit of `CAP_IPC_LOCK` in the capability masks (`<linux/capability.h>`). */
const CAP_IPC_LOCK = 14n;

function status(): string {
  try {
    return readFileSync('/proc/self/status', 'utf8');
  } catch {
    return '';
  }
}

/** Bytes this process has locked now (`VmLck`); 0 when unknown. */
export function lockedBytes(): number {
  const match = /^VmLck:\s+(\d+)\s+kB/m.exec(status());
  return match ? Number(match[1]) * 1024 : 0;
}

/** Whether the process holds `CAP_IPC_LOCK` in its effective set (then no memlock limit applies). */
export function hasIpcLock(): boolean {
  const match = /^CapEff:\s+([0-9a-f]+)/m.exec(status());
  return match ? ((BigInt(`0x${match[1]}`) >> CAP_IPC_LOCK) & 1n) === 1n : false;
}
