/**
 * Who owns a segment: the pool itself, or one of its private pools. Each owner keeps its free
 * blocks in one ordered index per pool (small, large) and stream, keyed by (size, address): a lower
 * bound on the size is PyTorch's best fit, ordered by (stream, size, address).
 */
import { OrderedIndex } from '@allot/blocks';
import type { Region } from '@allot/core';
import type { BlockChain } from './block-store';
import type { PoolCounters } from './pool-counters';
import { SparseIdIndex } from './sparse-index';
import type { Stream } from './stream-source';

/** A region from the source and where its blocks begin and end (`head`, `tail`). */
export interface Segment extends BlockChain {
  readonly region: Region;
  readonly address: number;
  /**
   * Bytes of address space the blocks cover (for an expandable segment, what has been grown so
   * far); reserved bytes are this less {@link unmapped}.
   */
  size: number;
  /** Bytes of the segment unmapped now (expandable segments only; see `unmapped-pages.ts`). */
  unmapped: number;
  readonly owner: PoolOwner;
  readonly small: boolean;
  readonly stream: Stream;
  readonly expandable: boolean;
  /** Clock reading when the segment last became entirely free (time-based decay). */
  idleSince: number;
}

/** The free blocks of one pool (small or large) of one owner, one index per stream. */
export class FreeLists {
  /** The default stream's index, kept apart for the common case. */
  stream0: OrderedIndex | null = null;
  /** Every index by stream (stream 0 included). */
  readonly byStream = new Map<Stream, OrderedIndex>();
  /** Free-block searches so far: the clock of garbage-collection ages. */
  searches = 0;

  constructor(readonly small: boolean) {}

  /** The index of `stream`, if any block was ever cached on it. */
  find(stream: Stream): OrderedIndex | undefined {
    return stream === 0 ? (this.stream0 ?? undefined) : this.byStream.get(stream);
  }

  /** The index of `stream`, created on first use. */
  index(stream: Stream): OrderedIndex {
    let index = this.find(stream);
    if (index === undefined) {
      // Other streams index block slots shared by every stream: sparse ids (see SparseIdIndex).
      index = stream === 0 ? new OrderedIndex() : new SparseIdIndex();
      this.byStream.set(stream, index);
      if (stream === 0) this.stream0 = index;
    }
    return index;
  }

  /** Indices in ascending stream order (PyTorch's set order). */
  ordered(): OrderedIndex[] {
    return [...this.byStream.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
  }

  clear(): void {
    for (const index of this.byStream.values()) index.clear();
    this.searches = 0;
  }
}

export class PoolOwner {
  readonly small = new FreeLists(true);
  readonly large = new FreeLists(false);
  readonly segments = new Set<Segment>();
  /** A released private pool: its segments go back to the source once unused. */
  retired = false;

  /**
   * @param id - 0 for the pool itself, 1, 2, ... for private pools.
   * @param counters - the owner's own statistics (private pools), or null (the pool's are global).
   */
  constructor(
    readonly id: number,
    readonly counters: PoolCounters | null,
  ) {}

  /** Name of a segment's pool in layouts: `small`/`large`, `private-<id>/small` ... */
  poolName(small: boolean): string {
    const kind = small ? 'small' : 'large';
    return this.id === 0 ? kind : `private-${this.id}/${kind}`;
  }
}
