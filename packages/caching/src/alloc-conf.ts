/**
 * The knobs of the pool, in the syntax of PyTorch's `PYTORCH_CUDA_ALLOC_CONF`:
 * `key:value` pairs separated by commas, and a bracketed list for `roundup_power2_divisions`
 * (`roundup_power2_divisions:[256:1,512:2,>:8]`). Where PyTorch's notes and its code disagree,
 * this parser follows the code (`c10/core/AllocatorConfig.cpp`): `max_split_size_mb` and
 * `max_non_split_rounding_mb` are at least 20, a list entry `>:n` fills the intervals after the last
 * one named, and the first named interval also fills every interval below it.
 *
 * Every mistake throws `InvalidArgumentError` naming the key or the value at fault, before the pool
 * exists. PyTorch keys that only matter to CUDA itself (pinned-memory threads, the allocator lock)
 * are accepted and ignored, so a configuration string can be shared with PyTorch unchanged.
 */
import { InvalidArgumentError, isPowerOfTwo } from '@allot/core';
import {
  LARGE_BUFFER,
  MIB,
  MIN_BLOCK_SIZE,
  MIN_LARGE_ALLOC,
  ROUND_LARGE,
  ROUNDUP_FIRST_LOG2,
  ROUNDUP_INTERVALS,
  SMALL_BUFFER,
  SMALL_SIZE,
} from './constants';

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
   * Fraction (0, 1] of the total memory the pool may reserve (`per_process_memory_fraction`);
   * `undefined` for no cap.
   * @defaultValue undefined
   */
  readonly memoryFraction: number | undefined;
}

/** The settings of an empty configuration string: PyTorch's defaults. */
export const DEFAULT_SETTINGS: AllocatorSettings = Object.freeze({
  maxSplitSize: Number.POSITIVE_INFINITY,
  maxNonSplitRounding: LARGE_BUFFER,
  roundupPower2Divisions: Object.freeze(new Array<number>(ROUNDUP_INTERVALS).fill(0)),
  garbageCollectionThreshold: 0,
  expandableSegments: false,
  memoryFraction: undefined,
});

/** The environment variable read when no configuration string is given. */
export const ALLOC_CONF_ENV = 'ALLOT_ALLOC_CONF';

/** Keys this pool acts on. */
const KNOWN_KEYS = [
  'max_split_size_mb',
  'max_non_split_rounding_mb',
  'roundup_power2_divisions',
  'garbage_collection_threshold',
  'expandable_segments',
  'per_process_memory_fraction',
] as const;

/** PyTorch keys that concern CUDA's host side only: accepted, checked loosely, ignored. */
const IGNORED_KEYS = new Set([
  'release_lock_on_cudamalloc',
  'pinned_use_cuda_host_register',
  'pinned_use_host_register',
  'pinned_num_register_threads',
  'pinned_use_background_threads',
  'pinned_reserve_segment_size_mb',
  'graph_capture_record_stream_reuse',
]);

/** Smallest value of the two `_mb` size knobs, in MiB (PyTorch: `kLargeBuffer / 1 MiB`). */
const MIN_SIZE_KNOB_MB = LARGE_BUFFER / MIB;

function tokenize(text: string): string[] {
  const tokens: string[] = [];
  let word = '';
  const flush = () => {
    const trimmed = word.trim();
    if (trimmed !== '') tokens.push(trimmed);
    word = '';
  };
  for (const ch of text) {
    if (ch === ',' || ch === ':' || ch === '[' || ch === ']') {
      flush();
      tokens.push(ch);
    } else {
      word += ch;
    }
  }
  flush();
  return tokens;
}

const SETTING = 'allocator configuration';

function syntaxError(text: string, what: string): InvalidArgumentError {
  return new InvalidArgumentError(SETTING, text, `"key:value" pairs separated by commas (${what})`);
}

function parseInteger(key: string, raw: string | undefined): number {
  const value = raw === undefined || !/^\d+$/.test(raw) ? Number.NaN : Number(raw);
  if (!Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(key, raw ?? '', 'a non-negative integer');
  }
  return value;
}

function parseRatio(key: string, raw: string | undefined, expectation: string): number {
  const value =
    raw === undefined || !/^(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw) ? Number.NaN : Number(raw);
  if (Number.isNaN(value)) throw new InvalidArgumentError(key, raw ?? '', expectation);
  return value;
}

function parseBoolean(key: string, raw: string | undefined): boolean {
  if (raw === 'True' || raw === 'true') return true;
  if (raw === 'False' || raw === 'false') return false;
  throw new InvalidArgumentError(key, raw ?? '', 'True or False');
}

/** Mutable copy of the settings while parsing. */
type Draft = { -readonly [K in keyof AllocatorSettings]: AllocatorSettings[K] };

/**
 * Parses a configuration string in `PYTORCH_CUDA_ALLOC_CONF` syntax into settings, starting from
 * {@link DEFAULT_SETTINGS}.
 * @throws InvalidArgumentError naming the key or value at fault: an unknown key, a value that is not
 * a number, a size under 20 MiB, divisions that are not powers of two, a threshold outside (0, 1).
 */
export function parseAllocConf(text: string): AllocatorSettings {
  const draft: Draft = {
    ...DEFAULT_SETTINGS,
    roundupPower2Divisions: [...DEFAULT_SETTINGS.roundupPower2Divisions],
  };
  const tokens = tokenize(text);
  let i = 0;
  const expect = (token: string, after: string) => {
    if (tokens[i] !== token) {
      throw syntaxError(
        text,
        `expected "${token}" after "${after}", found ${tokens[i] === undefined ? 'the end' : `"${tokens[i]}"`}`,
      );
    }
    i++;
  };
  const value = (key: string): string => {
    const v = tokens[i];
    if (v === undefined || v === ',' || v === ':' || v === '[' || v === ']') {
      throw new InvalidArgumentError(key, v ?? '', 'a value after the colon');
    }
    i++;
    return v;
  };

  while (i < tokens.length) {
    const key = tokens[i++]!;
    if (key === ',') continue;
    expect(':', key);
    switch (key) {
      case 'max_split_size_mb':
      case 'max_non_split_rounding_mb': {
        const mb = parseInteger(key, value(key));
        if (mb < MIN_SIZE_KNOB_MB) {
          throw new InvalidArgumentError(key, mb, `at least ${MIN_SIZE_KNOB_MB} (MiB)`);
        }
        const bytes = mb * MIB;
        if (!Number.isSafeInteger(bytes)) {
          throw new InvalidArgumentError(key, mb, 'a size in MiB below 2^33');
        }
        if (key === 'max_split_size_mb') draft.maxSplitSize = bytes;
        else draft.maxNonSplitRounding = bytes;
        break;
      }
      case 'garbage_collection_threshold': {
        const t = parseRatio(key, value(key), 'a number in (0.0, 1.0)');
        if (!(t > 0 && t < 1)) throw new InvalidArgumentError(key, t, 'a number in (0.0, 1.0)');
        draft.garbageCollectionThreshold = t;
        break;
      }
      case 'per_process_memory_fraction': {
        const f = parseRatio(key, value(key), 'a number in (0.0, 1.0]');
        if (!(f > 0 && f <= 1)) throw new InvalidArgumentError(key, f, 'a number in (0.0, 1.0]');
        draft.memoryFraction = f;
        break;
      }
      case 'expandable_segments':
        draft.expandableSegments = parseBoolean(key, value(key));
        break;
      case 'roundup_power2_divisions':
        i = parseDivisions(tokens, i, text, draft.roundupPower2Divisions as number[]);
        break;
      default:
        if (!IGNORED_KEYS.has(key)) {
          throw new InvalidArgumentError(
            `${SETTING} key`,
            key,
            `one of ${KNOWN_KEYS.join(', ')} (or a PyTorch pinned-memory key, ignored here)`,
          );
        }
        value(key);
    }
    if (i < tokens.length) expect(',', key);
  }
  return Object.freeze({
    ...draft,
    roundupPower2Divisions: Object.freeze(draft.roundupPower2Divisions),
  });
}

const DIVISIONS = 'roundup_power2_divisions';

function checkDivisions(divisions: number, allowZero: boolean): void {
  if (!(isPowerOfTwo(divisions) || (allowZero && divisions === 0))) {
    throw new InvalidArgumentError(
      DIVISIONS,
      divisions,
      allowZero ? 'a power of two, or 0 to turn rounding off' : 'a power of two',
    );
  }
}

/** Parses the value of `roundup_power2_divisions` at `tokens[i]`; returns the next index. */
function parseDivisions(tokens: string[], start: number, text: string, out: number[]): number {
  let i = start;
  const first = tokens[i];
  if (first !== '[') {
    const divisions = parseInteger(DIVISIONS, first);
    checkDivisions(divisions, false);
    out.fill(divisions);
    return i + 1;
  }
  i++;
  let firstValue = true;
  let lastIndex = 0;
  while (tokens[i] !== ']') {
    const boundary = tokens[i];
    if (boundary === undefined) throw syntaxError(text, `expected "]" to close ${DIVISIONS}`);
    i++;
    if (tokens[i] !== ':') {
      throw syntaxError(text, `expected ":" after "${boundary}" in ${DIVISIONS}`);
    }
    i++;
    const divisions = parseInteger(DIVISIONS, tokens[i]);
    i++;
    checkDivisions(divisions, true);
    if (boundary === '>') {
      out.fill(divisions, lastIndex + 1);
    } else {
      const mb = parseInteger(`${DIVISIONS} interval`, boundary);
      if (!isPowerOfTwo(mb)) {
        throw new InvalidArgumentError(
          `${DIVISIONS} interval`,
          mb,
          'a power of two number of MiB (the interval [n MiB, 2n MiB))',
        );
      }
      const index = Math.min(Math.round(Math.log2(mb)), ROUNDUP_INTERVALS - 1);
      if (firstValue) {
        out.fill(divisions, 0, index);
        firstValue = false;
      }
      out[index] = divisions;
      lastIndex = index;
    }
    if (tokens[i] === ',') i++;
    else if (tokens[i] !== ']') {
      throw syntaxError(text, `expected "," or "]" in ${DIVISIONS}`);
    }
  }
  return i + 1;
}

/**
 * The configuration string of an environment: `ALLOT_ALLOC_CONF`, or `''` when unset. Read when a
 * pool is created, never at import.
 */
export function allocConfFromEnv(
  env: Readonly<Record<string, string | undefined>> = typeof process === 'undefined'
    ? {}
    : process.env,
): string {
  return env[ALLOC_CONF_ENV] ?? '';
}

/** Exact floor(log2(size)) for a positive safe integer. */
function floorLog2(size: number): number {
  let log = Math.floor(Math.log2(size));
  while (2 ** log > size) log--;
  while (2 ** (log + 1) <= size) log++;
  return log;
}

/** Divisions that apply to `size` bytes. */
export function divisionsFor(size: number, divisions: readonly number[]): number {
  const log = floorLog2(size);
  const index = log > ROUNDUP_FIRST_LOG2 ? log - ROUNDUP_FIRST_LOG2 : 0;
  return divisions[Math.min(index, ROUNDUP_INTERVALS - 1)]!;
}

/** `size` rounded up to the next of `divisions` equal steps between two powers of two. */
export function roundUpToDivision(size: number, divisions: number): number {
  const floor = 2 ** floorLog2(size);
  if (floor === size) return size;
  const step = floor / divisions;
  if (step < 1) return floor * 2;
  const down = Math.floor(size / step) * step;
  return down === size ? size : down + step;
}

/**
 * The block size a request of `size` bytes gets: at least 512 B; a multiple of 512 B, or, where
 * `roundup_power2_divisions` applies and `size` exceeds 512 B × divisions, the next division.
 */
export function roundSize(size: number, divisions: readonly number[]): number {
  if (size <= MIN_BLOCK_SIZE) return MIN_BLOCK_SIZE;
  const d = divisionsFor(size, divisions);
  if (d > 1 && size > MIN_BLOCK_SIZE * d) return roundUpToDivision(size, d);
  return Math.ceil(size / MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE;
}

/** Size of the segment a cache miss for a block of `size` bytes acquires. */
export function allocationSize(size: number): number {
  if (size <= SMALL_SIZE) return SMALL_BUFFER;
  if (size < MIN_LARGE_ALLOC) return LARGE_BUFFER;
  return Math.ceil(size / ROUND_LARGE) * ROUND_LARGE;
}
