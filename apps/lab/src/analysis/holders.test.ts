import type { StackFrame, Trace } from '@allot/workloads';
import { TraceBuilder } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { holdersOf, isUserFrame, userFrame } from './holders';

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
    expect(userFrame([torch, attention, step])).toBe(attention);
    expect(userFrame([torch])).toBeUndefined();
    expect(isUserFrame({ filename: '', line: 0, name: 'c10::cuda::malloc' })).toBe(false);
  });

  it('sums the bytes of the given blocks by top user frame, largest first', () => {
    const sizes = [100, 200, 300, 400];
    expect(holdersOf(trace(), [0, 1, 2, 3], (block) => sizes[block]!)).toEqual([
      { frame: '(no stack recorded)', origin: 'none', bytes: 400, blocks: 1 },
      { frame: 'attention (model.py:88)', origin: 'code', bytes: 300, blocks: 2 },
      { frame: 'mlp (model.py:50)', origin: 'code', bytes: 300, blocks: 1 },
    ]);
    expect(holdersOf(trace(), [2], (block) => sizes[block]!)).toEqual([
      { frame: 'mlp (model.py:50)', origin: 'code', bytes: 300, blocks: 1 },
    ]);
  });

  it('never credits a C++ frame as a source line: a block with no frame of yours says what made it', () => {
    const unwind: StackFrame = { filename: '??', line: 0, name: 'torch::unwind::unwind()' };
    const engine: StackFrame = {
      filename: '??',
      line: 0,
      name: 'torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)',
    };
    const thread: StackFrame = {
      filename: 'thread48.o',
      line: 0,
      name: 'execute_native_thread_routine',
    };
    const builder = new TraceBuilder('cpp');
    for (const bytes of [100, 200, 300]) builder.alloc(bytes);
    const cpp: Trace = {
      ...builder.build('cpp'),
      frames: new Map<number, readonly StackFrame[]>([
        [0, [unwind, engine, thread]],
        [1, [unwind]],
        [2, [unwind, torch, attention]],
      ]),
    };
    const holders = holdersOf(cpp, [0, 1, 2], (block) => [100, 200, 300][block]!);
    expect(holders.map((holder) => holder.frame)).toEqual([
      'attention (model.py:88)',
      'C++ with no Python frame',
      "backward, on the autograd engine's thread (C++, no Python frame)",
    ]);
    expect(holders.map((holder) => holder.origin)).toEqual(['code', 'native', 'backward']);
  });

  it('says nothing for a trace without stacks', () => {
    const { frames: _frames, ...bare } = trace();
    expect(holdersOf(bare, [0, 1], () => 1)).toEqual([]);
  });
});
