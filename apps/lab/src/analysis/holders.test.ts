import type { StackFrame, Trace } from '@allot/workloads';
import { TraceBuilder } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { holdersOf, isUserFrame, topUserFrame } from './holders';

const torch: StackFrame = {
  filename: '/opt/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py',
  line: 125,
  name: 'forward',
};
const attention: StackFrame = { filename: 'model.py', line: 88, name: 'attention' };
const mlp: StackFrame = { filename: 'model.py', line: 50, name: 'mlp' };
const step: StackFrame = { filename: 'train.py', line: 31, name: 'train_step' };

/** Four blocks: two under `attention`, one under `mlp`, one without a stack. */
function trace(): Trace {
  const builder = new TraceBuilder('t');
  for (const bytes of [100, 200, 300, 400]) builder.alloc(bytes);
  const built = builder.build('t');
  const frames = new Map<number, readonly StackFrame[]>([
    [0, [torch, attention, step]],
    [1, [torch, attention, step]],
    [2, [mlp, step]],
  ]);
  return { ...built, frames };
}

describe('who holds the memory', () => {
  it('tells user frames from PyTorch, packages, the interpreter and C++', () => {
    expect(isUserFrame(torch)).toBe(false);
    expect(isUserFrame({ filename: '<frozen runpy>', line: 1, name: 'x' })).toBe(false);
    expect(isUserFrame({ filename: 'c10/cuda/CUDACachingAllocator.cpp', line: 1, name: 'x' })).toBe(
      false,
    );
    expect(isUserFrame(attention)).toBe(true);
    expect(topUserFrame([torch, attention, step])).toBe(attention);
    expect(topUserFrame([torch])).toBe(torch);
    expect(isUserFrame({ filename: '', line: 0, name: 'c10::cuda::malloc' })).toBe(false);
  });

  it('sums the bytes of the given blocks by top user frame, largest first', () => {
    const sizes = [100, 200, 300, 400];
    expect(holdersOf(trace(), [0, 1, 2, 3], (block) => sizes[block]!)).toEqual([
      { frame: '(no stack recorded)', bytes: 400, blocks: 1 },
      { frame: 'attention (model.py:88)', bytes: 300, blocks: 2 },
      { frame: 'mlp (model.py:50)', bytes: 300, blocks: 1 },
    ]);
    expect(holdersOf(trace(), [2], (block) => sizes[block]!)).toEqual([
      { frame: 'mlp (model.py:50)', bytes: 300, blocks: 1 },
    ]);
  });

  it('says nothing for a trace without stacks', () => {
    const { frames: _frames, ...bare } = trace();
    expect(holdersOf(bare, [0, 1], () => 1)).toEqual([]);
  });
});
