/**
 * A call tree of live blocks (`analysis/stack-tree.ts`) as page data: its nodes depth first in
 * columns, each frame's text once in a table the page data shares (the report's timeline frames, or
 * a table of its own for the web app's tree at any event).
 */
import type { StackNode, StackSum, StackTree } from '../analysis/stack-tree';
import { textTable } from '../analysis/text-table';
import { type StackTreeData, SUMMED_FRAME, UNRECORDED_FRAME } from '../ui/report-data';

/** `tree` as page data, its frames numbered by `index` (see the module comment). */
export function stackTreeData(tree: StackTree, index: (text: string) => number): StackTreeData {
  const parent: number[] = [];
  const frame: number[] = [];
  const nodeBytes: number[] = [];
  const nodeBlocks: number[] = [];
  const self: number[] = [];
  const push = (up: number, k: number, sum: StackSum, own: number): number => {
    parent.push(up);
    frame.push(k);
    nodeBytes.push(sum.bytes);
    nodeBlocks.push(sum.blocks);
    self.push(own);
    return parent.length - 1;
  };
  const add = (
    up: number,
    children: readonly StackNode[],
    other: (StackSum & { paths: number }) | undefined,
  ): void => {
    for (const child of children) {
      add(push(up, index(child.frame), child, child.selfBytes), child.children, child.other);
    }
    if (other) push(up, SUMMED_FRAME, other, other.paths);
  };
  add(-1, tree.children, tree.other);
  if (tree.unrecorded) push(-1, UNRECORDED_FRAME, tree.unrecorded, 0);
  return {
    bytes: tree.bytes,
    blocks: tree.blocks,
    minBytes: tree.minBytes,
    parent,
    frame,
    nodeBytes,
    nodeBlocks,
    self,
  };
}

/** `tree` as page data with a frame table of its own. */
export function stackTreePageData(tree: StackTree): {
  readonly tree: StackTreeData;
  readonly frameTexts: readonly string[];
} {
  const texts = textTable();
  return { tree: stackTreeData(tree, texts.index), frameTexts: texts.list };
}
