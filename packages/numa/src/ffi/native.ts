/**
 * The one internal API through which `@allot/numa` talks to the operating system (the only place,
 * with its siblings in this folder, that imports koffi). Every call goes through `check`, which
 * turns a failure into a `NativeCallError` naming the call, its arguments and errno.
 *
 * Two backends serve the NUMA calls (`mbind`, `get_mempolicy`, `move_pages`): libnuma's wrappers
 * when it is installed, or raw `syscall(2)` through libc. Memory calls (`mmap`, `mlock`, ...)
 * always go through libc. Addresses cross the boundary as numbers (`intptr_t`), exact below 2^53;
 * a view turns one back into a pointer with `memset(address, 0, 0)`, which returns its argument.
 */
import { formatBytes, UnsupportedError } from '@allot/core';
import { NativeCallError } from '../errors';
import {
  MAP_ANONYMOUS,
  MAP_HUGETLB,
  MAP_PRIVATE,
  NODE_MASK_BITS,
  PROT_READ,
  PROT_WRITE,
  RLIMIT_MEMLOCK,
  SC_PAGESIZE,
} from './constants';
import { type IKoffiLib, koffi } from './koffi';
import { type Env, LIBNUMA_PATH_ENV, loadLibc, loadLibnuma, NO_LIBNUMA_ENV } from './libraries';
import { numaSyscalls } from './syscall-numbers';

/** Which library serves the NUMA calls. */
export type NumaBackend = 'libnuma' | 'syscall';

/** How to pick the backend. */
export interface BackendOptions {
  /** Use libnuma when installed. @defaultValue true unless `ALLOT_NUMA_NO_LIBNUMA=1` */
  readonly libnuma?: boolean;
  /** Environment to read the overrides from. @defaultValue process.env */
  readonly env?: Env;
}

/** A memory policy as the kernel reports it. */
export interface RawPolicy {
  readonly mode: number;
  readonly nodes: readonly number[];
}

/** A soft and a hard limit in bytes; `Infinity` for `RLIM_INFINITY`. */
export interface Limits {
  readonly soft: number;
  readonly hard: number;
}

export interface NumaNative {
  readonly backend: NumaBackend;
  /** Path libnuma loaded from, when it did. */
  readonly libnumaPath: string | null;
  /** Why libnuma is not in use: skipped, or every path searched and its error. */
  readonly libnumaNotes: readonly string[];
  /** Base page size in bytes. */
  readonly pageSize: number;
  /** Address of a fresh private anonymous read-write mapping, or null when the kernel is out of memory. */
  map(size: number, hugeTlb: boolean): number | null;
  unmap(address: number, size: number): void;
  madvise(address: number, size: number, advice: number): void;
  mbind(address: number, size: number, mode: number, nodes: readonly number[]): void;
  getMempolicy(address: number): RawPolicy;
  /** Node of each page (negative errno for pages without one), `move_pages` in query mode. */
  movePages(addresses: readonly number[]): Int32Array;
  /** Residency of each page of the range (`mincore`): 1 when in memory. */
  residency(address: number, size: number): Uint8Array;
  mlock(address: number, size: number): void;
  munlock(address: number, size: number): void;
  memlockLimit(): Limits;
  /** An ArrayBuffer over `[address, address + size)`, without copying. */
  view(address: number, size: number): ArrayBuffer;
  /** Restricts the calling thread to `cpus` (`sched_setaffinity`). */
  setAffinity(cpus: readonly number[]): void;
  /** CPUs the calling thread may run on (`sched_getaffinity`). */
  affinity(): number[];
}

type Fn = (...args: unknown[]) => unknown;

interface Libc {
  readonly library: IKoffiLib;
  readonly mmap: Fn;
  readonly munmap: Fn;
  readonly madvise: Fn;
  readonly mlock: Fn;
  readonly mincore: Fn;
  readonly munlock: Fn;
  readonly getrlimit: Fn;
  readonly sysconf: Fn;
  readonly strerror: Fn;
  readonly pointer: Fn;
  readonly syscall: Fn;
  readonly schedSetaffinity: Fn;
  readonly schedGetaffinity: Fn;
}

let libcCache: Libc | undefined;

function libcFunctions(env: Env): Libc {
  if (libcCache !== undefined) return libcCache;
  const library = loadLibc(env);
  libcCache = {
    library,
    mmap: library.func(
      'intptr_t mmap(uintptr_t addr, size_t length, int prot, int flags, int fd, int64_t offset)',
    ),
    munmap: library.func('int munmap(uintptr_t addr, size_t length)'),
    madvise: library.func('int madvise(uintptr_t addr, size_t length, int advice)'),
    mlock: library.func('int mlock(uintptr_t addr, size_t len)'),
    mincore: library.func('int mincore(uintptr_t addr, size_t length, _Out_ uint8_t *vec)'),
    munlock: library.func('int munlock(uintptr_t addr, size_t len)'),
    getrlimit: library.func('int getrlimit(int resource, _Out_ uint64_t *rlim)'),
    sysconf: library.func('long sysconf(int name)'),
    strerror: library.func('const char *strerror(int errnum)'),
    pointer: library.func('void *memset(uintptr_t s, int c, size_t n)'),
    syscall: library.func('long syscall(long number, ...)'),
    schedSetaffinity: library.func(
      'int sched_setaffinity(int pid, size_t cpusetsize, const uint64_t *mask)',
    ),
    schedGetaffinity: library.func(
      'int sched_getaffinity(int pid, size_t cpusetsize, _Out_ uint64_t *mask)',
    ),
  };
  return libcCache;
}

const errnoNames = new Map<number, string>();
function errnoName(errno: number): string {
  if (errnoNames.size === 0) {
    for (const [name, value] of Object.entries(koffi().os.errno)) {
      if (!errnoNames.has(value)) errnoNames.set(value, name);
    }
  }
  return errnoNames.get(errno) ?? `errno ${errno}`;
}

/** Hex for addresses in messages. */
export function hex(address: number): string {
  return `0x${address.toString(16)}`;
}

/**
 * The checked-call helper: when `result` signals failure (negative), reads errno at once and
 * throws a `NativeCallError` naming `call` and its arguments.
 */
function check(
  libc: Libc,
  call: string,
  result: unknown,
  args: () => readonly string[],
  hint?: (name: string) => string | undefined,
): number {
  const value = Number(result);
  if (value >= 0) return value;
  const errno = koffi().errno();
  const name = errnoName(errno);
  const description = String(libc.strerror(errno) ?? '');
  throw new NativeCallError(call, args(), errno, name, description, hint?.(name));
}

const MPOL_NAMES = ['MPOL_DEFAULT', 'MPOL_PREFERRED', 'MPOL_BIND', 'MPOL_INTERLEAVE', 'MPOL_LOCAL'];

function nodeMask(nodes: readonly number[]): BigUint64Array {
  const mask = new BigUint64Array(NODE_MASK_BITS / 64);
  for (const node of nodes) {
    const word = Math.floor(node / 64);
    mask[word] = mask[word]! | (1n << BigInt(node % 64));
  }
  return mask;
}

function maskNodes(mask: BigUint64Array): number[] {
  const nodes: number[] = [];
  for (let word = 0; word < mask.length; word++) {
    const bits = mask[word]!;
    if (bits === 0n) continue;
    for (let bit = 0; bit < 64; bit++) {
      if ((bits >> BigInt(bit)) & 1n) nodes.push(word * 64 + bit);
    }
  }
  return nodes;
}

const seccompHint = (name: string): string | undefined =>
  name === 'EPERM'
    ? 'A seccomp filter may forbid NUMA system calls: in Docker they need CAP_SYS_NICE (`--cap-add SYS_NICE`).'
    : name === 'ENOSYS'
      ? 'The kernel was built without NUMA support (CONFIG_NUMA).'
      : undefined;

interface NumaCalls {
  readonly mbind: (
    address: number,
    size: number,
    mode: number,
    mask: BigUint64Array,
    maxnode: number,
  ) => unknown;
  readonly getMempolicy: (
    mode: Int32Array,
    mask: BigUint64Array,
    maxnode: number,
    address: number,
    flags: number,
  ) => unknown;
  readonly movePages: (count: number, pages: BigUint64Array, status: Int32Array) => unknown;
}

function libnumaCalls(library: IKoffiLib): NumaCalls {
  const mbind = library.func(
    'long mbind(uintptr_t start, unsigned long len, int mode, const uint64_t *nmask, unsigned long maxnode, unsigned int flags)',
  );
  const getMempolicy = library.func(
    'long get_mempolicy(_Out_ int *mode, _Out_ uint64_t *nmask, unsigned long maxnode, uintptr_t addr, unsigned int flags)',
  );
  const movePages = library.func(
    'long move_pages(int pid, unsigned long count, const uint64_t *pages, const int *nodes, _Out_ int *status, int flags)',
  );
  return {
    mbind: (address, size, mode, mask, maxnode) => mbind(address, size, mode, mask, maxnode, 0),
    getMempolicy: (mode, mask, maxnode, address, flags) =>
      getMempolicy(mode, mask, maxnode, address, flags),
    movePages: (count, pages, status) => movePages(0, count, pages, null, status, 0),
  };
}

function syscallCalls(libc: Libc): NumaCalls {
  const numbers = numaSyscalls(process.arch);
  if (numbers === null) {
    throw new UnsupportedError(
      `@allot/numa has no system call numbers for ${process.arch}; install libnuma (libnuma.so.1) ` +
        'so its wrappers are used instead.',
    );
  }
  const sys = libc.syscall;
  return {
    mbind: (address, size, mode, mask, maxnode) =>
      sys(
        numbers.mbind,
        'uintptr_t',
        address,
        'unsigned long',
        size,
        'int',
        mode,
        'uint64_t *',
        mask,
        'unsigned long',
        maxnode,
        'unsigned int',
        0,
      ),
    getMempolicy: (mode, mask, maxnode, address, flags) =>
      sys(
        numbers.getMempolicy,
        'int *',
        mode,
        'uint64_t *',
        mask,
        'unsigned long',
        maxnode,
        'uintptr_t',
        address,
        'unsigned long',
        flags,
      ),
    movePages: (count, pages, status) =>
      sys(
        numbers.movePages,
        'int',
        0,
        'unsigned long',
        count,
        'uint64_t *',
        pages,
        'int *',
        null,
        'int *',
        status,
        'int',
        0,
      ),
  };
}

const natives = new Map<string, NumaNative>();

/**
 * The native layer for `options` (created once per backend choice and reused). Reads the
 * environment now, never at import.
 * @throws UnsupportedError off Linux, or when libc cannot be loaded.
 */
export function numaNative(options: BackendOptions = {}): NumaNative {
  if (process.platform !== 'linux') {
    throw new UnsupportedError(
      `@allot/numa binds memory to NUMA nodes on Linux only; this is ${process.platform}.`,
    );
  }
  const env = options.env ?? process.env;
  // An explicit option wins; the environment variable sets the default.
  const skipped =
    options.libnuma === undefined ? env[NO_LIBNUMA_ENV] === '1' : options.libnuma === false;
  const key = skipped ? 'syscall' : `libnuma:${env[LIBNUMA_PATH_ENV] ?? ''}`;
  const cached = natives.get(key);
  if (cached !== undefined) return cached;
  const libc = libcFunctions(env);

  let calls: NumaCalls | null = null;
  let backend: NumaBackend = 'syscall';
  let libnumaPath: string | null = null;
  const notes: string[] = [];
  if (skipped) {
    notes.push(
      options.libnuma === false
        ? 'skipped: libnuma: false'
        : `skipped: ${NO_LIBNUMA_ENV}=1 in the environment`,
    );
  } else {
    const loaded = loadLibnuma(env);
    notes.push(...loaded.searched);
    if (loaded.library === null) {
      notes.push(`not found: using raw system calls (set ${LIBNUMA_PATH_ENV} to libnuma's path)`);
    }
    if (loaded.library !== null) {
      const available = Number(loaded.library.func('int numa_available(void)')());
      if (available >= 0) {
        calls = libnumaCalls(loaded.library);
        backend = 'libnuma';
        libnumaPath = loaded.path;
      } else {
        notes.push(`${loaded.path}: numa_available() returned ${available}`);
      }
    }
  }
  const numa = calls ?? syscallCalls(libc);
  const pageSize = check(libc, 'sysconf', libc.sysconf(SC_PAGESIZE), () => ['_SC_PAGESIZE']);
  const maxnode = NODE_MASK_BITS + 1;

  const native: NumaNative = {
    backend,
    libnumaPath,
    libnumaNotes: notes,
    pageSize,
    map(size, hugeTlb) {
      const flags = MAP_PRIVATE | MAP_ANONYMOUS | (hugeTlb ? MAP_HUGETLB : 0);
      const result = Number(libc.mmap(0, size, PROT_READ | PROT_WRITE, flags, -1, 0));
      if (result === -1) {
        const errno = koffi().errno();
        // Out of memory, or (for huge pages) none reserved: the caller falls back or reports null.
        if (errno === koffi().os.errno.ENOMEM) return null;
        if (hugeTlb && errno === koffi().os.errno.EINVAL) return null;
      }
      return check(libc, 'mmap', result, () => [
        'NULL',
        formatBytes(size),
        'PROT_READ | PROT_WRITE',
        `MAP_PRIVATE | MAP_ANONYMOUS${hugeTlb ? ' | MAP_HUGETLB' : ''}`,
        '-1',
        '0',
      ]);
    },
    unmap(address, size) {
      check(libc, 'munmap', libc.munmap(address, size), () => [hex(address), formatBytes(size)]);
    },
    madvise(address, size, advice) {
      check(libc, 'madvise', libc.madvise(address, size, advice), () => [
        hex(address),
        formatBytes(size),
        String(advice),
      ]);
    },
    mbind(address, size, mode, nodes) {
      const result = numa.mbind(address, size, mode, nodeMask(nodes), maxnode);
      check(
        libc,
        backend === 'libnuma' ? 'mbind (libnuma)' : 'mbind (syscall)',
        result,
        () => [
          hex(address),
          formatBytes(size),
          MPOL_NAMES[mode] ?? String(mode),
          `nodes [${nodes.join(', ')}]`,
          String(maxnode),
          '0',
        ],
        seccompHint,
      );
    },
    getMempolicy(address) {
      const mode = new Int32Array(1);
      const mask = new BigUint64Array(NODE_MASK_BITS / 64);
      const result = numa.getMempolicy(mode, mask, maxnode, address, 2 /* MPOL_F_ADDR */);
      check(
        libc,
        'get_mempolicy',
        result,
        () => ['&mode', '&nodemask', String(maxnode), hex(address), 'MPOL_F_ADDR'],
        seccompHint,
      );
      return { mode: mode[0]!, nodes: maskNodes(mask) };
    },
    movePages(addresses) {
      const pages = new BigUint64Array(addresses.length);
      for (let i = 0; i < addresses.length; i++) pages[i] = BigInt(addresses[i]!);
      const status = new Int32Array(addresses.length);
      const result = numa.movePages(addresses.length, pages, status);
      check(
        libc,
        'move_pages',
        result,
        () => [
          '0',
          String(addresses.length),
          `pages [${hex(addresses[0] ?? 0)}, ...]`,
          'NULL',
          '&status',
          '0',
        ],
        seccompHint,
      );
      return status;
    },
    residency(address, size) {
      const vector = new Uint8Array(Math.ceil(size / pageSize));
      check(libc, 'mincore', libc.mincore(address, size, vector), () => [
        hex(address),
        formatBytes(size),
        '&vec',
      ]);
      return vector;
    },
    mlock(address, size) {
      check(libc, 'mlock', libc.mlock(address, size), () => [hex(address), formatBytes(size)]);
    },
    munlock(address, size) {
      check(libc, 'munlock', libc.munlock(address, size), () => [hex(address), formatBytes(size)]);
    },
    memlockLimit() {
      const limits = new BigUint64Array(2);
      check(libc, 'getrlimit', libc.getrlimit(RLIMIT_MEMLOCK, limits), () => [
        'RLIMIT_MEMLOCK',
        '&rlim',
      ]);
      const toBytes = (value: bigint) =>
        value >= 0xffffffffffffffffn || value > BigInt(Number.MAX_SAFE_INTEGER)
          ? Number.POSITIVE_INFINITY
          : Number(value);
      return { soft: toBytes(limits[0]!), hard: toBytes(limits[1]!) };
    },
    view(address, size) {
      return koffi().view(libc.pointer(address, 0, 0), size);
    },
    setAffinity(cpus) {
      const mask = nodeMask(cpus);
      check(libc, 'sched_setaffinity', libc.schedSetaffinity(0, mask.byteLength, mask), () => [
        '0',
        String(mask.byteLength),
        `cpus [${cpus.join(', ')}]`,
      ]);
    },
    affinity() {
      const mask = new BigUint64Array(NODE_MASK_BITS / 64);
      check(libc, 'sched_getaffinity', libc.schedGetaffinity(0, mask.byteLength, mask), () => [
        '0',
        String(mask.byteLength),
        '&mask',
      ]);
      return maskNodes(mask);
    },
  };
  natives.set(key, native);
  return native;
}
