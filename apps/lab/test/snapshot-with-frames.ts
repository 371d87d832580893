/**
 * A small PyTorch memory snapshot recorded with stack frames (the JSON form of
 * `torch.cuda.memory._snapshot()`), for the report's tests: the shared snapshots were recorded
 * without frames. One training step on one 64 MiB segment and one small segment:
 *
 * ```
 *  segment_alloc 64 MiB ─ alloc x 8 MiB ─ alloc h1 16 MiB ─ alloc scores 32 MiB  (the peak: 56 MiB)
 *  ─ free scores ─ free h1 ─ segment_alloc 2 MiB (small) ─ alloc bias 4 KiB ─ free bias
 *  ─ alloc y 20 MiB ─ free y ─ free x
 * ```
 *
 * Each entry is 1 ms after the one before. `scores` (block 2) is the known allocation: its frames
 * name `attention_scores` in `model.py` line 88.
 */
const MiB = 2 ** 20;
const SEGMENT = 0x7f00_0000_0000;
const SMALL = 0x7f00_1000_0000;
const START_US = 1_700_000_000_000_000;

/** The frames of the known allocation, innermost first. */
export const SCORES_FRAMES = [
  { filename: 'model.py', line: 88, name: 'attention_scores' },
  { filename: 'model.py', line: 120, name: 'Block.forward' },
  { filename: 'train.py', line: 31, name: 'train_step' },
];

/** Block id of the known allocation (the third allocation of the window). */
export const SCORES_BLOCK = 2;

const frames = (name: string, line: number) => [
  { filename: 'model.py', line, name },
  { filename: 'train.py', line: 31, name: 'train_step' },
];

/** Address of the segment of `startingState`: held before the recording began. */
const WEIGHTS = 0x7f00_2000_0000;

/**
 * The snapshot dictionary (write it with `JSON.stringify` to a `.json` file). `startingState`: a
 * 20 MiB segment holding a 12 MiB block (weights) was there before the first entry and stays.
 */
export function snapshotWithFrames(
  options: { readonly startingState?: boolean } = {},
): Record<string, unknown> {
  const entries: Record<string, unknown>[] = [];
  const add = (
    action: string,
    addr: number,
    size: number,
    stack?: readonly { filename: string; line: number; name: string }[],
  ) => {
    entries.push({
      action,
      addr,
      size,
      stream: 0,
      time_us: START_US + 1000 * entries.length,
      ...(stack ? { frames: stack } : {}),
    });
  };
  const free = (addr: number, size: number) => {
    add('free_requested', addr, size);
    add('free_completed', addr, size);
  };
  add('segment_alloc', SEGMENT, 64 * MiB);
  add('alloc', SEGMENT, 8 * MiB, frames('embed', 40));
  add('alloc', SEGMENT + 8 * MiB, 16 * MiB, frames('Block.mlp', 102));
  add('alloc', SEGMENT + 24 * MiB, 32 * MiB, SCORES_FRAMES);
  free(SEGMENT + 24 * MiB, 32 * MiB);
  free(SEGMENT + 8 * MiB, 16 * MiB);
  add('segment_alloc', SMALL, 2 * MiB);
  add('alloc', SMALL, 4096, frames('bias', 77));
  free(SMALL, 4096);
  add('alloc', SEGMENT + 8 * MiB, 20 * MiB, frames('head', 140));
  free(SEGMENT + 8 * MiB, 20 * MiB);
  free(SEGMENT, 8 * MiB);
  return {
    segments: [
      {
        device: 0,
        address: SEGMENT,
        total_size: 64 * MiB,
        stream: 0,
        segment_type: 'large',
        is_expandable: false,
        blocks: [{ address: SEGMENT, size: 64 * MiB, requested_size: 0, state: 'inactive' }],
      },
      {
        device: 0,
        address: SMALL,
        total_size: 2 * MiB,
        stream: 0,
        segment_type: 'small',
        is_expandable: false,
        blocks: [{ address: SMALL, size: 2 * MiB, requested_size: 0, state: 'inactive' }],
      },
      ...(options.startingState
        ? [
            {
              device: 0,
              address: WEIGHTS,
              total_size: 20 * MiB,
              stream: 0,
              segment_type: 'large',
              is_expandable: false,
              blocks: [
                {
                  address: WEIGHTS,
                  size: 12 * MiB,
                  requested_size: 12 * MiB,
                  state: 'active_allocated',
                },
                {
                  address: WEIGHTS + 12 * MiB,
                  size: 8 * MiB,
                  requested_size: 0,
                  state: 'inactive',
                },
              ],
            },
          ]
        : []),
    ],
    device_traces: [entries],
    allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: '' },
  };
}
