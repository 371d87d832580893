/**
 * The call tree of the live blocks at the peak, as `replay --json` gives it (`explain.peak.stacks`)
 * and `results.json` keeps it, on the small snapshot recorded with stack frames.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { snapshotWithFrames } from '../test/snapshot-with-frames';
import type { StackNode, StackTree } from './analysis/stack-tree';
import { lab } from './lab';
import { Capture } from './test-capture';

const MiB = 2 ** 20;

interface Peak {
  readonly liveBytes: number;
  readonly bySource: readonly { frame: string; bytes: number }[];
  readonly stacks?: StackTree;
}

/** `[frame, bytes]` of each node, depth first, indented two spaces a level. */
function outline(nodes: readonly StackNode[], depth = 0): string[] {
  return nodes.flatMap((node) => [
    `${'  '.repeat(depth)}${node.frame} ${node.bytes / MiB} MiB`,
    ...outline(node.children, depth + 1),
  ]);
}

describe('replay --json: the call tree at the peak', () => {
  const dir = mkdtempSync(join(tmpdir(), 'allot-lab-stacks-'));
  writeFileSync(join(dir, 'frames.json'), JSON.stringify(snapshotWithFrames()));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('merges the live blocks’ stacks from the outermost frame in, beside the flat list', async () => {
    const stdout = new Capture();
    const stderr = new Capture();
    const status = await lab(
      ['replay', 'frames.json', '--allocators', 'caching', '--json', '--quiet'],
      { stdout, stderr, cwd: dir },
    );
    expect(stderr.text).toBe('');
    expect(status).toBe(0);
    const peak = JSON.parse(stdout.text).workloads[0].explain.peak as Peak;
    const tree = peak.stacks!;
    expect(tree.bytes).toBe(peak.liveBytes);
    expect(tree.blocks).toBe(3);
    expect(outline(tree.children)).toEqual([
      'train_step (train.py:31) 56 MiB',
      '  Block.forward (model.py:120) 32 MiB',
      '    attention_scores (model.py:88) 32 MiB',
      '  Block.mlp (model.py:102) 16 MiB',
      '  embed (model.py:40) 8 MiB',
    ]);
    expect(tree.children[0]!.children[0]!.children[0]!.selfBytes).toBe(32 * MiB);
    // The flat list stays the summary: the innermost user frames, the same bytes.
    expect(peak.bySource.map((holder) => [holder.frame, holder.bytes / MiB])).toEqual([
      ['attention_scores (model.py:88)', 32],
      ['Block.mlp (model.py:102)', 16],
      ['embed (model.py:40)', 8],
    ]);
    // results.json keeps the same tree.
    const results = JSON.parse(readFileSync(join(dir, 'lab-report', 'results.json'), 'utf8'));
    expect(results.workloads[0].explain.peak.stacks).toEqual(tree);
  });
});
