/**
 * The allocator contract the bench's harness drives, in its own module so that the rows (peers
 * included) and the registry that lists them do not import each other.
 */

/** What the harness calls: the two calls of the core contract a replay makes. */
export interface BenchAllocator {
  allocate(size: number, alignment?: number): number | null;
  free(address: number): void;
  /**
   * Bench-only hook for rows whose `free` does not give memory back (bump): called between timed
   * runs, after every live block was freed, to start over.
   */
  rewind?(): void;
  /**
   * Back to the initial state, every block forgotten (the core contract's `reset`). When present,
   * the harness reuses the instance between timed runs instead of making a fresh one.
   */
  reset?(): void;
}
