/**
 * Errors of `@allot/numa`, on top of the shared vocabulary of `@allot/core`: a failed system call
 * (named with its arguments and errno), and a page-locking request refused by `RLIMIT_MEMLOCK`.
 */
import { AllotError, formatBytes } from '@allot/core';

/** An allot error (from any copy of @allot/core, by its marker) with this code. */
function isAllotErrorWithCode(value: unknown, code: string): boolean {
  return AllotError.isInstance(value) && value.code === code;
}

/** Stable codes of the errors this package adds. */
export const NumaErrorCode = {
  NativeCall: 'ALLOT_NUMA_NATIVE_CALL',
  MemlockLimit: 'ALLOT_NUMA_MEMLOCK_LIMIT',
} as const;

/** A system or library call failed: which call, with which arguments, and the errno it set. */
export class NativeCallError extends AllotError {
  static readonly code = NumaErrorCode.NativeCall;
  /** The call, for example `mbind`. */
  readonly call: string;
  /** Its arguments as written in the message (addresses in hex, sizes in bytes). */
  readonly args: readonly string[];
  /** errno after the call. */
  readonly errno: number;
  /** Symbolic name of `errno` (`EINVAL`), or `errno <n>` when unknown. */
  readonly errnoName: string;

  constructor(
    call: string,
    args: readonly string[],
    errno: number,
    errnoName: string,
    description: string,
    hint?: string,
  ) {
    super(
      NumaErrorCode.NativeCall,
      `${call}(${args.join(', ')}) failed: ${errnoName} (${errno}) ${description}.` +
        (hint ? ` ${hint}` : ''),
    );
    this.call = call;
    this.args = args;
    this.errno = errno;
    this.errnoName = errnoName;
  }

  static override isInstance(value: unknown): value is NativeCallError {
    return isAllotErrorWithCode(value, NumaErrorCode.NativeCall);
  }
}

/** Figures behind a refused `mlock`. Limits are in bytes; `Infinity` means unlimited. */
export interface MemlockLimitDetails {
  /** Bytes the refused `mlock` asked to lock. */
  readonly requested: number;
  /** Soft `RLIMIT_MEMLOCK` (what `ulimit -l` shows, in KiB there). */
  readonly limit: number;
  /** Hard `RLIMIT_MEMLOCK`: the most an unprivileged process may raise the soft limit to. */
  readonly hardLimit: number;
  /** Bytes this process had locked already (`VmLck` of `/proc/self/status`). */
  readonly lockedBytes: number;
  /** Bytes the failing source had locked itself. */
  readonly lockedBySource: number;
}

function formatLimit(bytes: number): string {
  return Number.isFinite(bytes) ? formatBytes(bytes) : 'unlimited';
}

/**
 * `mlock` was refused because the request would take the process past `RLIMIT_MEMLOCK` and the
 * process lacks `CAP_IPC_LOCK`. The message says how to raise the limit.
 */
export class MemlockLimitError extends AllotError implements MemlockLimitDetails {
  static readonly code = NumaErrorCode.MemlockLimit;
  readonly requested: number;
  readonly limit: number;
  readonly hardLimit: number;
  readonly lockedBytes: number;
  readonly lockedBySource: number;

  constructor(details: MemlockLimitDetails, options?: { cause?: unknown }) {
    const kib = Math.ceil((details.lockedBytes + details.requested) / 1024);
    super(
      NumaErrorCode.MemlockLimit,
      `Cannot page-lock ${formatBytes(details.requested)} with mlock: RLIMIT_MEMLOCK is ` +
        `${formatLimit(details.limit)} (hard limit ${formatLimit(details.hardLimit)}) and this ` +
        `process has ${formatBytes(details.lockedBytes)} locked already ` +
        `(${formatBytes(details.lockedBySource)} by this source). ` +
        `Raise the limit before starting Node: \`ulimit -l ${kib}\` (KiB) or \`ulimit -l unlimited\` ` +
        `in the shell, \`memlock\` in /etc/security/limits.conf or \`LimitMEMLOCK=\` for a systemd ` +
        `service; or grant the CAP_IPC_LOCK capability (\`setcap cap_ipc_lock+ep\` on the node ` +
        `binary, or \`--cap-add IPC_LOCK\`); in a container, set its memlock limit ` +
        `(\`docker run --ulimit memlock=-1:-1\`, or the runtime's memlock setting). Or create the ` +
        `source with \`pin: false\` to use pageable memory.`,
      options,
    );
    this.requested = details.requested;
    this.limit = details.limit;
    this.hardLimit = details.hardLimit;
    this.lockedBytes = details.lockedBytes;
    this.lockedBySource = details.lockedBySource;
  }

  static override isInstance(value: unknown): value is MemlockLimitError {
    return isAllotErrorWithCode(value, NumaErrorCode.MemlockLimit);
  }
}
