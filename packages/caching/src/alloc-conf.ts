/**
 * The knobs of the pool, in the syntax of PyTorch's `PYTORCH_CUDA_ALLOC_CONF`:
 * `key:value` pairs separated by commas, and a bracketed list for `roundup_power2_divisions`
 * (`roundup_power2_divisions:[256:1,512:2,>:8]`). Where PyTorch's notes and its code disagree,
 * this parser follows the code (`c10/core/AllocatorConfig.{h,cpp}`, `ConfigTokenizer` and
 * `AcceleratorAllocatorConfig`, then `c10/cuda/CUDAAllocatorConfig.cpp`): `max_split_size_mb` and
 * `max_non_split_rounding_mb` are at least 20, a list entry `>:n` fills the intervals after the last
 * one named, and the first named interval also fills every interval below it.
 *
 * A string is accepted exactly when PyTorch accepts it, and a refusal throws
 * `InvalidArgumentError` quoting PyTorch's message, before the pool exists. PyTorch keys that only
 * matter to CUDA itself (pinned-memory threads, the allocator lock, `backend`) are checked as
 * PyTorch checks them and otherwise ignored, so a configuration string can be shared with PyTorch
 * unchanged.
 */
import { InvalidArgumentError } from '@allot/core';
import { LARGE_BUFFER, MIB, ROUNDUP_INTERVALS } from './constants';

/** The resolved knobs. Sizes in bytes. */
export interface AllocatorSettings {
  /**
   * Blocks of this size or more are never split, and serve only requests close to their size
   * (`max_split_size_mb`). `Infinity` means no limit.
   * @defaultValue Infinity
   */
  readonly maxSplitSize: number;
  /**
   * How much larger than a request of at least `maxSplitSize` a cached block may be and still serve
   * it (`max_non_split_rounding_mb`).
   * @defaultValue 20 MiB
   */
  readonly maxNonSplitRounding: number;
  /**
   * Divisions per power-of-two interval (`roundup_power2_divisions`), one entry per interval:
   * index 0 covers sizes under 2 MiB, index i ≥ 1 covers [2^(20+i), 2^(21+i)), index 15 everything
   * from 32 GiB. 0 or 1 means plain 512 B rounding.
   * @defaultValue sixteen zeros
   */
  readonly roundupPower2Divisions: readonly number[];
  /**
   * Fraction (0, 1) of the allowed memory above which a cache miss first frees old cached blocks
   * (`garbage_collection_threshold`); 0 turns it off. Needs a memory fraction.
   * @defaultValue 0
   */
  readonly garbageCollectionThreshold: number;
  /** Grow one segment per pool and stream in place (`expandable_segments`). @defaultValue false */
  readonly expandableSegments: boolean;
  /**
   * Fraction [0, 1] of the total memory the pool may reserve (`per_process_memory_fraction`);
   * `undefined` for no cap.
   * @defaultValue undefined
   */
  readonly memoryFraction: number | undefined;
  /**
   * The allocator PyTorch would run (`backend`): `cudaMallocAsync` hands every request to CUDA's
   * stream-ordered allocator, where none of the knobs above apply. The pool models `native`.
   * @defaultValue 'native'
   */
  readonly backend: AllocatorBackend;
}

/** The settings of an empty configuration string: PyTorch's defaults. */
export const DEFAULT_SETTINGS: AllocatorSettings = Object.freeze({
  maxSplitSize: Number.POSITIVE_INFINITY,
  maxNonSplitRounding: LARGE_BUFFER,
  roundupPower2Divisions: Object.freeze(new Array<number>(ROUNDUP_INTERVALS).fill(0)),
  garbageCollectionThreshold: 0,
  expandableSegments: false,
  memoryFraction: undefined,
  backend: 'native',
});

/** The environment variable read when no configuration string is given. */
export const ALLOC_CONF_ENV = 'ALLOT_ALLOC_CONF';

/** Which allocator PyTorch would use (`backend`). The pool models `native` either way. */
export type AllocatorBackend = 'native' | 'cudaMallocAsync';

/** The version of PyTorch whose parser {@link parseAllocConf} follows. */
export const ALLOC_CONF_PYTORCH_VERSION = '2.11';

/** The keys of PyTorch's device-independent parser (`AcceleratorAllocatorConfig`). */
const GENERIC_KEYS = [
  'max_split_size_mb',
  'max_non_split_rounding_mb',
  'garbage_collection_threshold',
  'roundup_power2_divisions',
  'expandable_segments',
  'pinned_use_background_threads',
] as const;

/** The keys PyTorch's CUDA parser (`CUDAAllocatorConfig`) registers on top of those. */
const CUDA_KEYS = [
  'backend',
  'release_lock_on_cudamalloc',
  'pinned_use_cuda_host_register',
  'release_lock_on_hipmalloc',
  'pinned_use_hip_host_register',
  'graph_capture_record_stream_reuse',
  'pinned_reserve_segment_size_mb',
  'pinned_num_register_threads',
  'per_process_memory_fraction',
] as const;

const ALL_KEYS: ReadonlySet<string> = new Set<string>([...GENERIC_KEYS, ...CUDA_KEYS]);

/** Smallest value of the two `_mb` size knobs, in MiB (PyTorch: `kLargeBuffer / 1 MiB`). */
const MIN_SIZE_KNOB_MB = LARGE_BUFFER / MIB;
/** PyTorch's `pinned_max_register_threads()`. */
const MAX_REGISTER_THREADS = 128n;
const SIZE_MAX = (1n << 64n) - 1n;
const SETTING = 'allocator configuration';

/**
 * A configuration string PyTorch refuses. `message` carries PyTorch's own wording, so the error
 * reads the same as the one `import torch` would print for the same string.
 */
function refused(text: string, pytorchMessage: string): InvalidArgumentError {
  return new InvalidArgumentError(
    SETTING,
    text,
    `a string PyTorch ${ALLOC_CONF_PYTORCH_VERSION} accepts; PyTorch says: ${pytorchMessage}`,
  );
}

/**
 * PyTorch's `ConfigTokenizer`: `,` `:` `[` `]` are tokens of their own, every other run of
 * characters is a word, and white space (C's `isspace`) is dropped everywhere, even inside a word.
 */
function tokenize(text: string): string[] {
  const tokens: string[] = [];
  let word = '';
  for (const ch of text) {
    if (ch === ',' || ch === ':' || ch === '[' || ch === ']') {
      if (word !== '') tokens.push(word);
      word = '';
      tokens.push(ch);
    } else if (!/^[ \t\n\v\f\r]$/.test(ch)) {
      word += ch;
    }
  }
  if (word !== '') tokens.push(word);
  return tokens;
}

/** `std::stoull`: an optional sign and decimal digits at the start; the rest is ignored. */
function stoull(token: string, fail: (message: string) => never): bigint {
  const match = /^([+-]?)(\d+)/.exec(token);
  if (match === null) fail(`stoull: no conversion of '${token}' (std::invalid_argument)`);
  const magnitude = BigInt(match![2]!);
  if (magnitude > SIZE_MAX) fail(`stoull: '${token}' is out of range (std::out_of_range)`);
  // strtoull negates a value with a minus sign in unsigned arithmetic: -5 is 2^64 - 5.
  return match![1] === '-' ? (SIZE_MAX + 1n - magnitude) % (SIZE_MAX + 1n) : magnitude;
}

function hexFloat(digits: string, fraction: string, exponent: string): number {
  let value = 0;
  for (const d of digits) value = value * 16 + Number.parseInt(d, 16);
  let scale = 1 / 16;
  for (const d of fraction) {
    value += Number.parseInt(d, 16) * scale;
    scale /= 16;
  }
  return value * 2 ** Number(exponent || '0');
}

/** `std::stod`: the longest prefix `strtod` reads (decimal, hex, inf, nan); none is an error. */
function stod(token: string, fail: (message: string) => never): number {
  let value: number;
  const hex = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?/.exec(token);
  const special = /^([+-]?)(inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)/i.exec(token);
  const decimal = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(token);
  if (hex !== null && (hex[2]! + (hex[3] ?? '')).length > 0) {
    value = (hex[1] === '-' ? -1 : 1) * hexFloat(hex[2]!, hex[3] ?? '', hex[4] ?? '');
  } else if (special !== null) {
    const sign = special[1] === '-' ? -1 : 1;
    value = special[2]!.toLowerCase().startsWith('inf')
      ? sign * Number.POSITIVE_INFINITY
      : Number.NaN;
    return value;
  } else if (decimal !== null) {
    value = Number(decimal[0]);
  } else {
    return fail(`stod: no conversion of '${token}' (std::invalid_argument)`);
  }
  // strtod reports ERANGE for overflow and for results too small to be normal; stod throws then.
  if (!Number.isFinite(value) || (value !== 0 && Math.abs(value) < 2.2250738585072014e-308)) {
    fail(`stod: '${token}' is out of range (std::out_of_range)`);
  }
  if (value === 0 && /[1-9]/.test((decimal?.[0] ?? '').replace(/[eE].*$/, ''))) {
    fail(`stod: '${token}' is out of range (std::out_of_range)`);
  }
  return value;
}

function isPowerOfTwo64(value: bigint): boolean {
  return value !== 0n && (value & (value - 1n)) === 0n;
}

/** `min(mb, SIZE_MAX / 1 MiB) * 1 MiB` in bytes; beyond 2^53 no block is that large: Infinity. */
function megabytes(mb: bigint): number {
  const bytes = Number(mb) * MIB;
  return Number.isSafeInteger(bytes) ? bytes : Number.POSITIVE_INFINITY;
}

/** Mutable copy of the settings while parsing. */
type Draft = { -readonly [K in keyof AllocatorSettings]: AllocatorSettings[K] };

/** PyTorch's `ConfigTokenizer` over one string, with its checks and its wording. */
class Tokens {
  readonly tokens: string[];

  constructor(
    readonly text: string,
    readonly fail: (message: string) => never,
  ) {
    this.tokens = tokenize(text);
  }

  get size(): number {
    return this.tokens.length;
  }

  at(i: number): string {
    if (i >= this.tokens.length) this.fail('Index out of bounds in ConfigTokenizer');
    return this.tokens[i]!;
  }

  /**
   * PyTorch's `checkToken` only insists that the token exists: whether it is the expected one is
   * returned, and every caller ignores the answer. So does this.
   */
  check(i: number): void {
    this.at(i);
  }

  toSizeT(i: number): bigint {
    return stoull(this.at(i), this.fail);
  }

  toDouble(i: number): number {
    return stod(this.at(i), this.fail);
  }

  toBool(i: number): boolean {
    const token = this.at(i);
    if (token === 'True') return true;
    if (token === 'False') return false;
    return this.fail(
      `Expected 'True' or 'False' at index ${i} in ConfigTokenizer but got '${token}'`,
    );
  }

  /** Skips a key and its value (a word, or a bracketed list); returns the index of the value's end. */
  skipKey(start: number): number {
    let i = start;
    this.check(++i);
    i++;
    if (this.at(i) !== '[') return i;
    while (++i < this.tokens.length && this.tokens[i] !== ']') {}
    if (i >= this.tokens.length) {
      this.fail("Expected closing bracket ']' in ConfigTokenizer but reached end of config");
    }
    return i;
  }
}

/** PyTorch's `AcceleratorAllocatorConfig::parseArgs`: the device-independent keys. */
function parseGeneric(t: Tokens, draft: Draft): void {
  for (let i = 0; i < t.size; i++) {
    const key = t.at(i);
    switch (key) {
      case 'max_split_size_mb':
      case 'max_non_split_rounding_mb': {
        t.check(++i);
        const mb = t.toSizeT(++i);
        if (mb < BigInt(MIN_SIZE_KNOB_MB)) {
          t.fail(`CachingAllocator option ${key} too small, must be >= ${MIN_SIZE_KNOB_MB}`);
        }
        if (key === 'max_split_size_mb') draft.maxSplitSize = megabytes(mb);
        else draft.maxNonSplitRounding = megabytes(mb);
        break;
      }
      case 'garbage_collection_threshold': {
        t.check(++i);
        const value = t.toDouble(++i);
        if (!(value > 0 && value < 1)) {
          t.fail('garbage_collect_threshold is invalid, set it in (0.0, 1.0)');
        }
        draft.garbageCollectionThreshold = value;
        break;
      }
      case 'roundup_power2_divisions':
        i = parseDivisions(t, i, draft.roundupPower2Divisions as number[]);
        break;
      case 'expandable_segments':
        t.check(++i);
        draft.expandableSegments = t.toBool(++i);
        break;
      case 'pinned_use_background_threads':
        t.check(++i);
        t.toBool(++i);
        break;
      default:
        i = t.skipKey(i);
    }
    if (i + 1 < t.size) t.check(++i);
  }
}

/** `roundup_power2_divisions` at key index `start`; returns the index of the value's last token. */
function parseDivisions(t: Tokens, start: number, out: number[]): number {
  let i = start;
  t.check(++i);
  if (t.at(++i) !== '[') {
    const divisions = t.toSizeT(i);
    if (!isPowerOfTwo64(divisions)) t.fail('For roundups, the divisions has to be power of 2');
    out.fill(Number(divisions));
    return i;
  }
  let firstValue = true;
  let lastIndex = 0;
  while (++i < t.size && t.tokens[i] !== ']') {
    const boundaryAt = i;
    t.check(++i);
    const divisions = t.toSizeT(++i);
    if (divisions !== 0n && !isPowerOfTwo64(divisions)) {
      t.fail('For roundups, the divisions has to be power of 2 or 0 to disable roundup');
    }
    if (t.at(boundaryAt) === '>') {
      out.fill(Number(divisions), Math.min(lastIndex + 1, ROUNDUP_INTERVALS));
    } else {
      const boundary = t.toSizeT(boundaryAt);
      if (!isPowerOfTwo64(boundary)) t.fail('For roundups, the intervals have to be power of 2');
      const index = Math.min(boundary.toString(2).length - 1, ROUNDUP_INTERVALS - 1);
      if (firstValue) {
        out.fill(Number(divisions), 0, index);
        firstValue = false;
      }
      out[index] = Number(divisions);
      lastIndex = index;
    }
    if (t.at(i + 1) !== ']') t.check(++i);
  }
  if (i >= t.size) {
    t.fail("Expected closing bracket ']' in ConfigTokenizer but reached end of config");
  }
  return i;
}

/** PyTorch's `CUDAAllocatorConfig::parseArgs`, run after the generic parser on the same string. */
function parseCuda(t: Tokens, draft: Draft): void {
  for (let i = 0; i < t.size; i++) {
    const key = t.at(i);
    switch (key) {
      case 'backend': {
        t.check(++i);
        const backend = t.at(++i);
        if (backend !== 'native' && backend !== 'cudaMallocAsync') {
          t.fail('Unknown allocator backend, options are native and cudaMallocAsync');
        }
        draft.backend = backend as AllocatorBackend;
        break;
      }
      case 'release_lock_on_hipmalloc':
      case 'release_lock_on_cudamalloc':
      case 'pinned_use_hip_host_register':
      case 'pinned_use_cuda_host_register':
      case 'graph_capture_record_stream_reuse':
        t.check(++i);
        t.toBool(++i);
        break;
      case 'pinned_num_register_threads': {
        t.check(++i);
        const threads = t.toSizeT(++i);
        if (!isPowerOfTwo64(threads)) {
          t.fail(`Number of register threads has to be power of 2, got ${threads}`);
        }
        if (threads > MAX_REGISTER_THREADS) {
          t.fail(
            `Number of register threads should be less than or equal to ${MAX_REGISTER_THREADS}, got ${threads}`,
          );
        }
        break;
      }
      case 'pinned_reserve_segment_size_mb':
        t.check(++i);
        if (t.toSizeT(++i) === 0n) t.fail('Pinned reserve segment size has to be greater than 0');
        break;
      case 'per_process_memory_fraction': {
        t.check(++i);
        const fraction = t.toDouble(++i);
        if (!(fraction >= 0 && fraction <= 1)) {
          t.fail('per_process_memory_fraction is invalid, set it in [0.0, 1.0]');
        }
        draft.memoryFraction = fraction;
        break;
      }
      default:
        if (!ALL_KEYS.has(key)) t.fail(`Unrecognized key '${key}' in CUDA allocator config.`);
        i = t.skipKey(i);
    }
    if (i + 1 < t.size) t.check(++i);
  }
}

/**
 * Parses a configuration string in `PYTORCH_CUDA_ALLOC_CONF` syntax into settings, starting from
 * {@link DEFAULT_SETTINGS}, with exactly the grammar of PyTorch {@link ALLOC_CONF_PYTORCH_VERSION}:
 * its tokenizer, then its device-independent parser, then its CUDA parser, each over the whole
 * string. What PyTorch accepts is accepted (also its quirks: it never checks that a separator is
 * the `:` or `,` it expects, `std::stoull` reads `-5` as 2^64 − 5 and `12abc` as 12), and what it
 * refuses is refused with PyTorch's message: an unknown key, a missing value, `True`/`False` in
 * another case, a size under 20 MiB, divisions that are not powers of two, a threshold outside
 * (0, 1), a fraction outside [0, 1], a backend other than `native` or `cudaMallocAsync`.
 * @throws InvalidArgumentError whose message quotes PyTorch's.
 */
export function parseAllocConf(text: string): AllocatorSettings {
  const draft: Draft = {
    ...DEFAULT_SETTINGS,
    roundupPower2Divisions: [...DEFAULT_SETTINGS.roundupPower2Divisions],
  };
  const tokens = new Tokens(text, (message: string): never => {
    throw refused(text, message);
  });
  parseGeneric(tokens, draft);
  parseCuda(tokens, draft);
  return Object.freeze({
    ...draft,
    roundupPower2Divisions: Object.freeze(draft.roundupPower2Divisions),
  });
}

/**
 * PyTorch's own variables, read after {@link ALLOC_CONF_ENV}: `PYTORCH_ALLOC_CONF` (PyTorch 2.9 and
 * later) then `PYTORCH_CUDA_ALLOC_CONF` (its older name, still honoured), so settings ported from a
 * PyTorch job apply unchanged, and `ALLOT_ALLOC_CONF` can still set the pool apart.
 */
export const PYTORCH_ALLOC_CONF_ENVS = ['PYTORCH_ALLOC_CONF', 'PYTORCH_CUDA_ALLOC_CONF'] as const;

/**
 * The configuration string of an environment: `ALLOT_ALLOC_CONF`, else PyTorch's
 * `PYTORCH_ALLOC_CONF`, else `PYTORCH_CUDA_ALLOC_CONF`, else `''`. Read when a pool is created,
 * never at import.
 */
export function allocConfFromEnv(
  env: Readonly<Record<string, string | undefined>> = typeof process === 'undefined'
    ? {}
    : process.env,
): string {
  for (const name of [ALLOC_CONF_ENV, ...PYTORCH_ALLOC_CONF_ENVS]) {
    const value = env[name];
    if (value !== undefined) return value;
  }
  return '';
}
