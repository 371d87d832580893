/**
 * System call numbers of the NUMA calls that libc does not wrap, per architecture (x86-64 from
 * `arch/x86/entry/syscalls/syscall_64.tbl`, the others from `include/uapi/asm-generic/unistd.h`).
 */
export interface NumaSyscalls {
  readonly mbind: number;
  readonly getMempolicy: number;
  readonly movePages: number;
  readonly schedSetaffinity: number;
}

const X64: NumaSyscalls = { mbind: 237, getMempolicy: 239, movePages: 279, schedSetaffinity: 203 };
const GENERIC: NumaSyscalls = {
  mbind: 235,
  getMempolicy: 236,
  movePages: 239,
  schedSetaffinity: 122,
};

/** The numbers for `arch` (a `process.arch` value), or null where they are not known here. */
export function numaSyscalls(arch: string): NumaSyscalls | null {
  switch (arch) {
    case 'x64':
      return X64;
    case 'arm64':
    case 'riscv64':
    case 'loong64':
      return GENERIC;
    default:
      return null;
  }
}
