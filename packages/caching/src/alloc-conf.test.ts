import { InvalidArgumentError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import {
  ALLOC_CONF_PYTORCH_VERSION,
  allocConfFromEnv,
  DEFAULT_SETTINGS,
  parseAllocConf,
} from './alloc-conf';
import { allocationSize, roundSize } from './size-policy';

const MiB = 1024 * 1024;

function errorOf(text: string): InvalidArgumentError {
  try {
    parseAllocConf(text);
  } catch (error) {
    if (InvalidArgumentError.isInstance(error)) return error as InvalidArgumentError;
    throw error;
  }
  throw new Error(`"${text}" was accepted`);
}

describe('parseAllocConf', () => {
  it('gives PyTorch defaults for an empty string', () => {
    expect(parseAllocConf('')).toEqual(DEFAULT_SETTINGS);
    expect(DEFAULT_SETTINGS.maxSplitSize).toBe(Number.POSITIVE_INFINITY);
    expect(DEFAULT_SETTINGS.maxNonSplitRounding).toBe(20 * MiB);
  });

  it('reads every knob', () => {
    const s = parseAllocConf(
      'max_split_size_mb:128, max_non_split_rounding_mb:64,garbage_collection_threshold:0.6,' +
        'expandable_segments:True,roundup_power2_divisions:4,per_process_memory_fraction:0.5',
    );
    expect(s.maxSplitSize).toBe(128 * MiB);
    expect(s.maxNonSplitRounding).toBe(64 * MiB);
    expect(s.garbageCollectionThreshold).toBe(0.6);
    expect(s.expandableSegments).toBe(true);
    expect(s.roundupPower2Divisions).toEqual(new Array(16).fill(4));
    expect(s.memoryFraction).toBe(0.5);
  });

  it('accepts max_split_size_mb:20, the smallest value the current code allows', () => {
    expect(parseAllocConf('max_split_size_mb:20').maxSplitSize).toBe(20 * MiB);
  });

  it('reads the interval list: the first entry fills below it, ">" fills after the last', () => {
    const s = parseAllocConf('roundup_power2_divisions:[256:1,512:2,1024:4,>:8]');
    expect(s.roundupPower2Divisions).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 8, 8, 8, 8]);
    const zero = parseAllocConf('roundup_power2_divisions:[64:8,>:0]');
    expect(zero.roundupPower2Divisions.slice(0, 8)).toEqual([8, 8, 8, 8, 8, 8, 8, 0]);
  });

  it('ignores PyTorch pinned-memory keys', () => {
    expect(parseAllocConf('pinned_num_register_threads:8,release_lock_on_cudamalloc:True')).toEqual(
      DEFAULT_SETTINGS,
    );
  });

  it('reads ALLOT_ALLOC_CONF from the environment given', () => {
    expect(allocConfFromEnv({ ALLOT_ALLOC_CONF: 'expandable_segments:True' })).toBe(
      'expandable_segments:True',
    );
    expect(allocConfFromEnv({})).toBe('');
  });

  it("falls back to PyTorch's own variables, so ported settings apply unchanged", () => {
    const torch = 'max_split_size_mb:128';
    expect(allocConfFromEnv({ PYTORCH_CUDA_ALLOC_CONF: torch })).toBe(torch);
    expect(allocConfFromEnv({ PYTORCH_ALLOC_CONF: torch, PYTORCH_CUDA_ALLOC_CONF: 'x' })).toBe(
      torch,
    );
    expect(
      allocConfFromEnv({ ALLOT_ALLOC_CONF: '', PYTORCH_CUDA_ALLOC_CONF: torch }),
      'ALLOT_ALLOC_CONF, even empty, sets the pool apart',
    ).toBe('');
  });
});

describe('roundSize', () => {
  const none = DEFAULT_SETTINGS.roundupPower2Divisions;
  const four = parseAllocConf('roundup_power2_divisions:4').roundupPower2Divisions;

  it('rounds to 512 B by default', () => {
    expect(roundSize(1, none)).toBe(512);
    expect(roundSize(512, none)).toBe(512);
    expect(roundSize(513, none)).toBe(1024);
    expect(roundSize(9000, none)).toBe(9216);
  });

  it('rounds to the next of 4 divisions above 512 B × 4', () => {
    expect(roundSize(9000, four)).toBe(10240);
    // 1200 B ≤ 512 B × 4: the code rounds to 512 B only (the notes would say 1280 B).
    expect(roundSize(1200, four)).toBe(1536);
    expect(roundSize(2049, four)).toBe(2560);
    expect(roundSize(8192, four)).toBe(8192);
    expect(roundSize(1100 * MiB, four)).toBe(1280 * MiB);
  });

  it('uses the divisions of the size interval', () => {
    const list = parseAllocConf(
      'roundup_power2_divisions:[256:1,512:2,>:8]',
    ).roundupPower2Divisions;
    expect(roundSize(300 * MiB + 1, list)).toBe(300 * MiB + 512);
    expect(roundSize(600 * MiB, list)).toBe(768 * MiB);
    expect(roundSize(1100 * MiB, list)).toBe(1152 * MiB);
  });
});

describe('allocationSize', () => {
  it('follows the segment rules', () => {
    expect(allocationSize(512)).toBe(2 * MiB);
    expect(allocationSize(MiB)).toBe(2 * MiB);
    expect(allocationSize(MiB + 512)).toBe(20 * MiB);
    expect(allocationSize(10 * MiB - 512)).toBe(20 * MiB);
    expect(allocationSize(10 * MiB)).toBe(10 * MiB);
    expect(allocationSize(15 * MiB)).toBe(16 * MiB);
  });
});

/**
 * PyTorch's verdict on each string: `true` where `import torch` with
 * `PYTORCH_CUDA_ALLOC_CONF=<string>` starts (on a CUDA build), else a fragment of the message it
 * raises. Worked by hand from PyTorch 2.11's parser: `ConfigTokenizer` in c10/core/AllocatorConfig.h,
 * `AcceleratorAllocatorConfig::parseArgs` in c10/core/AllocatorConfig.cpp, then
 * `CUDAAllocatorConfig::parseArgs` in c10/cuda/CUDAAllocatorConfig.cpp over the same string.
 */
const PYTORCH_VERDICTS: ReadonlyArray<readonly [string, true | string]> = [
  // Empty and white space: the defaults.
  ['', true],
  ['   ', true],
  ['\t\n', true],
  // Every key PyTorch knows, with a good value.
  ['max_split_size_mb:128', true],
  ['max_split_size_mb:20', true],
  ['max_non_split_rounding_mb:64', true],
  ['garbage_collection_threshold:0.6', true],
  ['garbage_collection_threshold:.5', true],
  ['garbage_collection_threshold:6e-1', true],
  ['garbage_collection_threshold:0x1p-1', true],
  ['expandable_segments:True', true],
  ['expandable_segments:False', true],
  ['roundup_power2_divisions:4', true],
  ['roundup_power2_divisions:[256:1,512:2,1024:4,>:8]', true],
  ['roundup_power2_divisions:[64:8,>:0]', true],
  ['roundup_power2_divisions:[>:4]', true],
  ['roundup_power2_divisions:[]', true],
  ['pinned_use_background_threads:True', true],
  ['backend:native', true],
  ['backend:cudaMallocAsync', true],
  ['release_lock_on_cudamalloc:True', true],
  ['release_lock_on_hipmalloc:False', true],
  ['pinned_use_cuda_host_register:True', true],
  ['pinned_use_hip_host_register:False', true],
  ['pinned_num_register_threads:8', true],
  ['pinned_num_register_threads:128', true],
  ['pinned_reserve_segment_size_mb:64', true],
  ['graph_capture_record_stream_reuse:True', true],
  ['per_process_memory_fraction:0.5', true],
  ['per_process_memory_fraction:1', true],
  ['per_process_memory_fraction:0', true],
  // Several keys, white space anywhere (even inside a word), repeats (the last one wins).
  ['max_split_size_mb:128, garbage_collection_threshold:0.6,expandable_segments:True', true],
  ['max_split _size_mb : 1 28', true],
  ['expandable_segments:True,expandable_segments:False', true],
  ['backend:native,max_split_size_mb:256,roundup_power2_divisions:[256:4,>:2]', true],
  // Quirks PyTorch accepts: separators are never checked, stoull and stod read a prefix.
  ['max_split_size_mb:128,', true],
  ['max_split_size_mb,128', true],
  ['expandable_segments:True:max_split_size_mb:128', true],
  ['max_split_size_mb:-5', true],
  ['max_split_size_mb:128abc', true],
  ['max_split_size_mb:+64', true],
  ['max_split_size_mb:99999999999999', true],
  ['garbage_collection_threshold:0.5x', true],
  ['roundup_power2_divisions:[256:1 512:2]', 'power of 2 or 0 to disable roundup'],
  // Separators PyTorch refuses.
  [',', 'Index out of bounds'],
  [',max_split_size_mb:128', "Unrecognized key ','"],
  ['max_split_size_mb:128,,garbage_collection_threshold:0.5', "Unrecognized key ','"],
  [',,', 'Index out of bounds'],
  [':', 'Index out of bounds'],
  ['max_split_size_mb', 'Index out of bounds'],
  ['max_split_size_mb:', 'Index out of bounds'],
  ['max_split_size_mb 128', 'Index out of bounds'],
  ['max_split_size_mb 128:256', "Unrecognized key 'max_split_size_mb128'"],
  ['max_split_size_mb=128', 'Index out of bounds'],
  ['max_split_size_mb=128:True', "Unrecognized key 'max_split_size_mb=128'"],
  // Unknown keys, and keys of other PyTorch versions or backends.
  ['bogus_knob:1', "Unrecognized key 'bogus_knob'"],
  ['max_split_size:128', "Unrecognized key 'max_split_size'"],
  ['Max_Split_Size_MB:128', "Unrecognized key 'Max_Split_Size_MB'"],
  ['large_segment_size_mb:40', "Unrecognized key 'large_segment_size_mb'"],
  ['throw_on_cudamalloc_oom:True', "Unrecognized key 'throw_on_cudamalloc_oom'"],
  // Booleans: exactly True or False.
  ['expandable_segments:true', "Expected 'True' or 'False' at index 2"],
  ['expandable_segments:TRUE', "Expected 'True' or 'False'"],
  ['expandable_segments:1', "Expected 'True' or 'False'"],
  ['expandable_segments:maybe', "Expected 'True' or 'False'"],
  ['release_lock_on_cudamalloc:maybe', "Expected 'True' or 'False'"],
  ['pinned_use_background_threads:yes', "Expected 'True' or 'False'"],
  ['graph_capture_record_stream_reuse:false', "Expected 'True' or 'False'"],
  ['expandable_segments:True expandable_segments:False', "Expected 'True' or 'False'"],
  // Numbers.
  ['max_split_size_mb:abc', 'stoull'],
  ['max_split_size_mb:19', 'max_split_size_mb too small, must be >= 20'],
  ['max_split_size_mb:0', 'max_split_size_mb too small'],
  ['max_non_split_rounding_mb:1.5', 'max_non_split_rounding_mb too small'],
  ['max_split_size_mb:99999999999999999999999', 'stoull'],
  [
    'garbage_collection_threshold:1.5',
    'garbage_collect_threshold is invalid, set it in (0.0, 1.0)',
  ],
  ['garbage_collection_threshold:0', 'garbage_collect_threshold is invalid'],
  ['garbage_collection_threshold:1', 'garbage_collect_threshold is invalid'],
  ['garbage_collection_threshold:nan', 'garbage_collect_threshold is invalid'],
  ['garbage_collection_threshold:x', 'stod'],
  ['per_process_memory_fraction:2', 'per_process_memory_fraction is invalid, set it in [0.0, 1.0]'],
  ['per_process_memory_fraction:-0.1', 'per_process_memory_fraction is invalid'],
  ['pinned_num_register_threads:3', 'Number of register threads has to be power of 2, got 3'],
  ['pinned_num_register_threads:256', 'should be less than or equal to 128, got 256'],
  ['pinned_num_register_threads:0', 'has to be power of 2, got 0'],
  ['pinned_reserve_segment_size_mb:0', 'Pinned reserve segment size has to be greater than 0'],
  // roundup_power2_divisions.
  ['roundup_power2_divisions:3', 'the divisions has to be power of 2'],
  ['roundup_power2_divisions:0', 'the divisions has to be power of 2'],
  ['roundup_power2_divisions:[256:3]', 'power of 2 or 0 to disable roundup'],
  ['roundup_power2_divisions:[300:2]', 'the intervals have to be power of 2'],
  ['roundup_power2_divisions:[256:1', 'Index out of bounds'],
  ['roundup_power2_divisions:[256:1,', "Expected closing bracket ']'"],
  ['roundup_power2_divisions:[abc:1]', 'stoull'],
  ['roundup_power2_divisions:', 'Index out of bounds'],
  // backend.
  ['backend:hipMallocAsync', 'Unknown allocator backend, options are native and cudaMallocAsync'],
  ['backend:Native', 'Unknown allocator backend'],
  ['backend:', 'Index out of bounds'],
];

describe(`parseAllocConf follows PyTorch ${ALLOC_CONF_PYTORCH_VERSION}`, () => {
  it('holds at least 60 strings', () => {
    expect(PYTORCH_VERDICTS.length).toBeGreaterThanOrEqual(60);
  });

  it.each(PYTORCH_VERDICTS)('%j: %s', (text, verdict) => {
    if (verdict === true) {
      expect(() => parseAllocConf(text)).not.toThrow();
      return;
    }
    const error = errorOf(text);
    expect(error.code).toBe('ALLOT_INVALID_ARGUMENT');
    expect(error.message).toContain(verdict);
  });

  it('reads what the quirks mean', () => {
    expect(parseAllocConf('max_split_size_mb,128').maxSplitSize).toBe(128 * MiB);
    expect(parseAllocConf('max_split_size_mb:128abc').maxSplitSize).toBe(128 * MiB);
    // stoull("-5") is 2^64 - 5 MiB: no block is that large.
    expect(parseAllocConf('max_split_size_mb:-5').maxSplitSize).toBe(Number.POSITIVE_INFINITY);
    expect(parseAllocConf('garbage_collection_threshold:0x1p-1').garbageCollectionThreshold).toBe(
      0.5,
    );
    expect(
      parseAllocConf('expandable_segments:True,expandable_segments:False').expandableSegments,
    ).toBe(false);
  });

  it('records the backend', () => {
    expect(parseAllocConf('').backend).toBe('native');
    expect(parseAllocConf('backend:cudaMallocAsync').backend).toBe('cudaMallocAsync');
  });

  it("quotes PyTorch's message and the string", () => {
    const error = errorOf('expandable_segments:true');
    expect(error.message).toContain('"expandable_segments:true"');
    expect(error.message).toContain("got 'true'");
  });
});
