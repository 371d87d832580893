import { InvalidArgumentError } from '@allot/core';
import { describe, expect, it } from 'vitest';
import {
  allocationSize,
  allocConfFromEnv,
  DEFAULT_SETTINGS,
  parseAllocConf,
  roundSize,
} from './alloc-conf';

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

  it.each([
    ['max_split_size_mb:abc', 'max_split_size_mb', 'abc'],
    ['max_split_size_mb:19', 'max_split_size_mb', 19],
    ['max_split_size_mb:-5', 'max_split_size_mb', '-5'],
    ['max_non_split_rounding_mb:1.5', 'max_non_split_rounding_mb', '1.5'],
    ['max_split_size:128', 'allocator configuration key', 'max_split_size'],
    ['bogus_knob:1', 'allocator configuration key', 'bogus_knob'],
    ['roundup_power2_divisions:3', 'roundup_power2_divisions', 3],
    ['roundup_power2_divisions:0', 'roundup_power2_divisions', 0],
    ['roundup_power2_divisions:[256:3]', 'roundup_power2_divisions', 3],
    ['roundup_power2_divisions:[300:2]', 'roundup_power2_divisions interval', 300],
    ['garbage_collection_threshold:1.5', 'garbage_collection_threshold', 1.5],
    ['garbage_collection_threshold:0', 'garbage_collection_threshold', 0],
    ['garbage_collection_threshold:x', 'garbage_collection_threshold', 'x'],
    ['expandable_segments:maybe', 'expandable_segments', 'maybe'],
    ['per_process_memory_fraction:2', 'per_process_memory_fraction', 2],
  ])('rejects %s naming %s', (text, argument, value) => {
    const error = errorOf(text);
    expect(error.argument).toBe(argument);
    expect(error.value).toBe(value);
    expect(error.message).toContain(argument);
  });

  it.each([
    'max_split_size_mb',
    'max_split_size_mb:',
    'max_split_size_mb 128',
    'roundup_power2_divisions:[256:1',
    'roundup_power2_divisions:[256 1]',
    'expandable_segments:True expandable_segments:False',
  ])('rejects the malformed string %j', (text) => {
    const error = errorOf(text);
    expect(error.code).toBe('ALLOT_INVALID_ARGUMENT');
  });

  it('reads ALLOT_ALLOC_CONF from the environment given', () => {
    expect(allocConfFromEnv({ ALLOT_ALLOC_CONF: 'expandable_segments:True' })).toBe(
      'expandable_segments:True',
    );
    expect(allocConfFromEnv({})).toBe('');
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
