import { hostSource } from '@allot/core';
import { describeConformance } from '@allot/testkit/vitest';
import { cachingPool } from './caching-pool';

const MiB = 1024 * 1024;

function subject(config: string, growable = false) {
  const source = hostSource({ limit: 64 * MiB, growable, maxRegionSize: 64 * MiB });
  return {
    allocator: cachingPool({ source, config }),
    view: (address: number, size: number) => source.view(address, size),
  };
}

// A pool keeps what it acquired (restoresInitialUsage: false), merges every segment back into one
// free block (coalesces, expandable ones too), and starts empty (no maximal allocation to restore).
const capabilities = {
  restoresInitialUsage: false,
  coalesces: true,
  maxRequestSize: 3 * MiB,
  alignments: [1, 8, 64, 512, 4096],
} as const;

describeConformance({ name: 'caching pool', create: () => subject(''), capabilities });
describeConformance({
  name: 'caching pool (max_split_size_mb:20, roundup_power2_divisions:4)',
  create: () => subject('max_split_size_mb:20,roundup_power2_divisions:4'),
  capabilities,
});
describeConformance({
  name: 'caching pool (expandable_segments:True)',
  create: () => subject('expandable_segments:True', true),
  capabilities,
});
