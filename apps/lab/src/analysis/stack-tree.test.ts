import { Random, type StackFrame, type Trace, TraceBuilder } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import {
  liveBlocksAt,
  type StackNode,
  type StackTree,
  stackTreeAt,
  stackTreeOf,
} from './stack-tree';

const frame = (name: string, line: number, filename = 'model.py'): StackFrame => ({
  filename,
  line,
  name,
});
const main = frame('main', 3, 'train.py');
const step = frame('train_step', 31, 'train.py');
const attention = frame('attention', 88);
const mlp = frame('mlp', 50);
const linear = frame(
  'forward',
  125,
  '/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py',
);

/** Allocations of `sizes` (block ids 0, 1, …), each with its stack (innermost first) or none. */
function traceOf(blocks: readonly (readonly [number, readonly StackFrame[] | null])[]): Trace {
  const builder = new TraceBuilder('t');
  for (const [bytes] of blocks) builder.alloc(bytes);
  const frames = new Map<number, readonly StackFrame[]>();
  blocks.forEach(([, stack], block) => {
    if (stack !== null) frames.set(block, stack);
  });
  return { ...builder.build('t'), frames };
}

/** Every listed node: its bytes are its own, its callees' and its summed callees'. */
function checkSums(node: StackNode | StackTree, minBytes: number): number {
  const children = node.children.reduce((sum, child) => sum + child.bytes, 0);
  const self = 'selfBytes' in node ? node.selfBytes : (node.unrecorded?.bytes ?? 0);
  expect(node.bytes).toBe(children + (node.other?.bytes ?? 0) + self);
  let listed = node.children.length;
  for (const child of node.children) {
    expect(child.bytes).toBeGreaterThanOrEqual(minBytes);
    listed += checkSums(child, minBytes);
  }
  if (node.other) expect(node.other.bytes / node.other.paths).toBeLessThanOrEqual(minBytes);
  return listed;
}

describe('the call tree of the live blocks', () => {
  it('merges stacks from the outermost frame in, bytes, blocks and share per frame', () => {
    const shared = [linear, attention, step, main];
    const trace = traceOf([
      [100, shared],
      [200, shared],
      // Another list with the same frames: the same call path.
      [300, [frame('forward', 125, linear.filename), attention, step, main]],
      [400, [mlp, step, main]],
      [50, [step, main]],
      [7, null],
    ]);
    const tree = stackTreeOf(trace, [0, 1, 2, 3, 4, 5], (block) => trace.size[block]!)!;
    expect(tree.bytes).toBe(1057);
    expect(tree.blocks).toBe(6);
    expect(tree.unrecorded).toEqual({ bytes: 7, blocks: 1 });
    expect(tree.children.map((node) => node.frame)).toEqual(['main (train.py:3)']);
    const top = tree.children[0]!;
    expect(top).toMatchObject({ bytes: 1050, blocks: 5, selfBytes: 0 });
    const stepNode = top.children[0]!;
    expect(stepNode).toMatchObject({
      frame: 'train_step (train.py:31)',
      bytes: 1050,
      selfBytes: 50,
    });
    // Callees, the most bytes first.
    expect(stepNode.children.map((node) => [node.frame, node.bytes, node.blocks])).toEqual([
      ['attention (model.py:88)', 600, 3],
      ['mlp (model.py:50)', 400, 1],
    ]);
    const leaf = stepNode.children[0]!.children[0]!;
    expect(leaf).toMatchObject({ bytes: 600, blocks: 3, selfBytes: 600, children: [] });
    expect(leaf.frame).toBe(`forward (${linear.filename}:125)`);
    expect(tree.nodes).toBe(5);
    expect(tree.summedNodes).toBe(0);
    checkSums(tree, tree.minBytes);
  });

  it('sums the call paths under 0.1 % of the bytes, and past the most nodes listed', () => {
    // One big path and 50 small ones under it, each a 5,000th of the bytes.
    const blocks: [number, StackFrame[]][] = [[1_000_000, [attention, step]]];
    for (let k = 0; k < 50; k++) blocks.push([200, [frame(`op${k}`, k), step]]);
    const trace = traceOf(blocks);
    const all = blocks.map((_, block) => block);
    const tree = stackTreeOf(trace, all, (block) => trace.size[block]!)!;
    const stepNode = tree.children[0]!;
    expect(stepNode.children.map((node) => node.frame)).toEqual(['attention (model.py:88)']);
    expect(stepNode.other).toEqual({ bytes: 10_000, blocks: 50, paths: 50 });
    expect(tree.summedNodes).toBe(50);
    checkSums(tree, tree.minBytes);

    // A share of 0 lists them all, unless the most nodes are fewer.
    const every = stackTreeOf(trace, all, (block) => trace.size[block]!, { minShare: 0 })!;
    expect(every.children[0]!.children).toHaveLength(51);
    const few = stackTreeOf(trace, all, (block) => trace.size[block]!, {
      minShare: 0,
      maxNodes: 10,
    })!;
    expect(few.nodes).toBe(10);
    expect(checkSums(few, few.minBytes)).toBe(10);
    expect(few.children[0]!.other!.paths).toBe(51 - 9);
  });

  it('holds its sums on random stacks, whatever is summed', () => {
    const random = new Random(7);
    const locations = Array.from({ length: 30 }, (_, k) => frame(`f${k}`, k));
    for (let round = 0; round < 40; round++) {
      const blocks: [number, StackFrame[] | null][] = [];
      const count = 1 + random.integer(0, 200);
      for (let b = 0; b < count; b++) {
        const depth = random.integer(0, 6);
        const stack = Array.from({ length: depth }, () => locations[random.integer(0, 29)]!);
        blocks.push([1 + random.integer(0, 1 << 20), depth === 0 ? null : stack]);
      }
      const trace = traceOf(blocks);
      const maxNodes = 1 + random.integer(0, 60);
      const minShare = random.next() * 0.05;
      const tree = stackTreeOf(
        trace,
        blocks.map((_, block) => block),
        (block) => trace.size[block]!,
        {
          maxNodes,
          minShare,
        },
      )!;
      expect(tree.bytes).toBe(blocks.reduce((sum, [bytes]) => sum + bytes, 0));
      expect(tree.nodes).toBeLessThanOrEqual(maxNodes);
      expect(checkSums(tree, tree.minBytes)).toBe(tree.nodes);
    }
  });

  it('is the tree just after any event: freed blocks gone', () => {
    const builder = new TraceBuilder('t');
    const a = builder.alloc(100);
    const b = builder.alloc(300);
    builder.free(a);
    builder.alloc(50);
    const trace: Trace = {
      ...builder.build('t'),
      frames: new Map([
        [0, [attention, step]],
        [1, [mlp, step]],
        [2, [attention, step]],
      ]),
    };
    expect(liveBlocksAt(trace, 1).blocks).toEqual([a, b]);
    expect(stackTreeAt(trace, 1)!.bytes).toBe(400);
    const after = stackTreeAt(trace, 3)!;
    expect(after.bytes).toBe(350);
    expect(after.children[0]!.children.map((node) => [node.frame, node.bytes])).toEqual([
      ['mlp (model.py:50)', 300],
      ['attention (model.py:88)', 50],
    ]);
    // Without stacks there is no tree.
    expect(stackTreeAt({ ...trace, frames: new Map() }, 3)).toBeNull();
  });
});
