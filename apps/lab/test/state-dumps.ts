/**
 * State dumps for the tests (`torch.cuda.memory._snapshot()` with no history: segments and blocks,
 * and device traces with no allocation), and what each holds, worked out from the dump itself so
 * the lab's figures are checked against the file and not against the lab:
 *
 * ```
 *  hand-built            three segments: live blocks with stacks, a hole, a block pending on a
 *                        stream, a free tail, a whole free segment
 *  public                ../shared/traces/public/state-dump-*.pickle, as they are (one in PyTorch
 *                        2.0's format: blocks with a `history` and no `address`)
 *  made from the H100    each snapshot of ../shared/traces/pytorch-h100: its end state, its
 *  recordings            history dropped; the recordings carry no stack, so each live block gets
 *                        one by a rule (`make-state-dump.mjs`) that the holders are checked against
 * ```
 *
 * Every dump is written as a file (JSON for those made here) once per test file; pickles are read
 * in a process of their own (`make-state-dump.mjs`).
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** The script that writes a snapshot's JSON form, or a dump made of it, in its own process. */
const MAKE = join(import.meta.dirname, 'make-state-dump.mjs');

const MiB = 2 ** 20;

/** A stack frame as PyTorch records it. */
interface Frame {
  readonly filename: string;
  readonly line: number;
  readonly name: string;
}

/** A block of a dump as this file reads it, whichever PyTorch wrote it. */
interface RawBlock {
  readonly size: number;
  readonly requested_size?: number;
  readonly state: string;
  readonly frames?: readonly Frame[];
  readonly history?: readonly { readonly frames?: readonly Frame[] }[];
}

/** A segment of a dump as this file reads it. */
interface RawSegment {
  readonly device?: number;
  readonly total_size: number;
  readonly blocks: RawBlock[];
}

/** The dump dictionary. */
export interface RawDump {
  readonly segments: RawSegment[];
  readonly device_traces: unknown[];
  readonly [key: string]: unknown;
}

/** What a dump's device holds, from its segments alone. */
export interface DumpExpected {
  /** Bytes of the device's segments (`total_size`). */
  readonly reservedBytes: number;
  /** Bytes of its allocated blocks (`active_allocated`), as `memory_stats()` counts them. */
  readonly allocatedBytes: number;
  readonly segments: number;
  /** Live blocks (allocated, or pending on a stream). */
  readonly liveBlocks: number;
  /**
   * Live bytes requested, by the innermost frame of the user's in the block's stack (`file:line`),
   * when blocks have one.
   */
  readonly bySource: ReadonlyMap<string, number>;
  /** The largest free block's bytes (0 with none free). */
  readonly largestFreeBytes: number;
}

/** A state dump to test on. */
export interface DumpCase {
  /** What it is, for the test's name. */
  readonly name: string;
  readonly path: string;
  /** By device, in the order the lab names them. */
  readonly devices: readonly DumpExpected[];
}

/** The stacks the hand-built dump's blocks carry, innermost first. */
const frames = (line: number, name: string): Frame[] => [
  {
    filename: '/usr/lib/python3/site-packages/torch/nn/modules/linear.py',
    line: 125,
    name: 'forward',
  },
  { filename: 'model.py', line, name },
  { filename: 'train.py', line: 31, name: 'train_step' },
];

/**
 * A state dump built by hand, with stacks: a 40 MiB segment (8 MiB and 16 MiB blocks, a 6 MiB hole,
 * 4 MiB, a 6 MiB free tail), a small one (4 KiB pending on a stream, the rest free), and a 20 MiB
 * segment with nothing live. Reserved 62 MiB, allocated 28 MiB, the largest free block 20 MiB.
 */
export function handBuiltDump(): RawDump {
  const A = 0x7f00_0000_0000;
  const B = 0x7f00_1000_0000;
  const C = 0x7f00_2000_0000;
  const block = (address: number, size: number, state: string, f: Frame[] = []) => ({
    address,
    size,
    requested_size: state === 'inactive' ? 0 : size,
    state,
    frames: f,
  });
  const segment = (address: number, size: number, pool: string, blocks: RawBlock[]) => ({
    device: 0,
    address,
    total_size: size,
    stream: 0,
    segment_type: pool,
    is_expandable: false,
    blocks,
  });
  return {
    segments: [
      segment(A, 40 * MiB, 'large', [
        block(A, 8 * MiB, 'active_allocated', frames(40, 'embed')),
        block(A + 8 * MiB, 16 * MiB, 'active_allocated', frames(88, 'attention')),
        block(A + 24 * MiB, 6 * MiB, 'inactive'),
        block(A + 30 * MiB, 4 * MiB, 'active_allocated', frames(40, 'embed')),
        block(A + 34 * MiB, 6 * MiB, 'inactive'),
      ]),
      segment(B, 2 * MiB, 'small', [
        block(B, 4096, 'active_pending_free', frames(77, 'bias')),
        block(B + 4096, 2 * MiB - 4096, 'inactive'),
      ]),
      segment(C, 20 * MiB, 'large', [block(C, 20 * MiB, 'inactive')]),
    ],
    device_traces: [[{ action: 'snapshot', addr: 0, size: 0, stream: 0 }]],
    allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: 'max_split_size_mb:128' },
  };
}

/** A block's innermost stack: its own frames, else its newest history's (PyTorch 2.0). */
function stackOf(block: RawBlock): readonly Frame[] {
  if (block.frames !== undefined && block.frames.length > 0) return block.frames;
  const history = block.history ?? [];
  return history[history.length - 1]?.frames ?? [];
}

/** Whether a frame is the user's: not PyTorch's, not an installed package's, not C++. */
const ownFrame = (frame: Frame) =>
  !/site-packages|dist-packages|\/torch\/|^\?\?|\.(?:cpp|cc|h|o)$/.test(frame.filename) &&
  frame.filename !== '';

/** What `dump` holds on each device (see {@link DumpExpected}), in device order. */
export function expectedOf(dump: RawDump): DumpExpected[] {
  const devices = new Map<number, RawSegment[]>();
  for (const segment of dump.segments) {
    const device = segment.device ?? 0;
    devices.set(device, [...(devices.get(device) ?? []), segment]);
  }
  return [...devices.keys()]
    .sort((a, b) => a - b)
    .map((device) => {
      const segments = devices.get(device)!;
      const bySource = new Map<string, number>();
      let reservedBytes = 0;
      let allocatedBytes = 0;
      let liveBlocks = 0;
      let largestFreeBytes = 0;
      for (const segment of segments) {
        reservedBytes += segment.total_size;
        for (const block of segment.blocks) {
          if (block.state === 'inactive') {
            largestFreeBytes = Math.max(largestFreeBytes, block.size);
            continue;
          }
          liveBlocks++;
          if (block.state === 'active_allocated') allocatedBytes += block.size;
          const own = stackOf(block).find(ownFrame);
          if (own !== undefined) {
            const key = `${own.filename}:${own.line}`;
            bySource.set(key, (bySource.get(key) ?? 0) + (block.requested_size ?? block.size));
          }
        }
      }
      return {
        reservedBytes,
        allocatedBytes,
        segments: segments.length,
        liveBlocks,
        bySource,
        largestFreeBytes,
      };
    });
}

/** `snapshot` as a plain value written to `out` (JSON), made a state dump when `dropHistory`. */
async function made(snapshot: string, out: string, dropHistory: boolean): Promise<RawDump> {
  await promisify(execFile)(process.execPath, [
    MAKE,
    snapshot,
    out,
    ...(dropHistory ? ['--drop-history'] : []),
  ]);
  return JSON.parse(readFileSync(out, 'utf8')) as RawDump;
}

/**
 * Every state dump to test on (see the module comment), the made ones written to `dir`: the
 * hand-built one, then those of `shared` (the traces folder) when it is there.
 */
export async function stateDumpCases(
  dir: string,
  shared: string | null,
  /** Which H100 recordings to make dumps of, by file name (all of them unless given). */
  recordings = /./,
): Promise<DumpCase[]> {
  const hand = join(dir, 'hand-built.json');
  writeFileSync(hand, JSON.stringify(handBuiltDump()));
  const cases: DumpCase[] = [
    { name: 'hand-built', path: hand, devices: expectedOf(handBuiltDump()) },
  ];
  if (shared === null) return cases;
  const files = (folder: string, pattern: RegExp) =>
    existsSync(join(shared, folder))
      ? readdirSync(join(shared, folder))
          .filter((name) => pattern.test(name))
          .sort()
      : [];
  for (const name of files('public', /^state-dump-.*\.pickle$/)) {
    const path = join(shared, 'public', name);
    const dump = await made(path, join(dir, `${name}.json`), false);
    cases.push({ name, path, devices: expectedOf(dump) });
  }
  for (const name of files('pytorch-h100', /\.pickle(?:\.gz)?$/)) {
    if (!recordings.test(name)) continue;
    const path = join(dir, `dump-of-${name.replace(/\.pickle(?:\.gz)?$/, '')}.json`);
    const dump = await made(join(shared, 'pytorch-h100', name), path, true);
    cases.push({ name: `dump of ${name}`, path, devices: expectedOf(dump) });
  }
  return cases;
}
