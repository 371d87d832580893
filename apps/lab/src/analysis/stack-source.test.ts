import { MAX_STACK_FRAMES, type StackFrame } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { isUserFrame, stackSource } from './stack-source';

const frame = (name: string, filename: string, line = 0): StackFrame => ({ name, filename, line });

/** The innermost frames PyTorch records with `stacks="all"` for every CUDA allocation. */
const allocator: StackFrame[] = [
  frame('torch::unwind::unwind()', '??'),
  frame('torch::CapturedTraceback::gather(bool, bool, bool)', '??'),
  frame('torch::cuda::(anonymous namespace)::gather_with_cpp()', 'memory_snapshot.cpp'),
  frame(
    'c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)',
    'CUDACachingAllocator.cpp',
  ),
  frame(
    'c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)',
    '',
  ),
  frame('at::_ops::mm::call(at::Tensor const&, at::Tensor const&)', '??'),
];

/** A block made during backward on the autograd engine's thread: no Python frame at all. */
const backward: StackFrame[] = [
  ...allocator,
  frame(
    'torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)',
    '??',
  ),
  frame(
    'torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)',
    'function.h',
  ),
  frame(
    'torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)',
    '??',
  ),
  frame(
    'torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)',
    '??',
  ),
  frame(
    'torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)',
    'python_engine.cpp',
  ),
  frame('execute_native_thread_routine', 'thread48.o'),
  frame('start_thread', 'pthread_create.c', 442),
  frame('clone', '../sysdeps/unix/sysv/linux/x86_64/clone.S', 100),
];

const linear = frame(
  'forward',
  '/env/lib/python3.10/site-packages/torch/nn/modules/linear.py',
  125,
);
const qwen = frame(
  'forward',
  '/env/lib/python3.10/site-packages/transformers/models/qwen2/modeling_qwen2.py',
  54,
);
const interpreter = frame(
  '_PyEval_EvalFrameDefault',
  '/usr/local/src/conda/python-3.10.16/Python/ceval.c',
  5945,
);
const train = frame('train_step', '/home/me/project/train.py', 31);

describe('what made a block, from its stack', () => {
  it('names the innermost frame of your own Python code, past C++ and libraries', () => {
    expect(stackSource([...allocator, interpreter, linear, interpreter, qwen, train])).toEqual({
      origin: 'code',
      text: 'train_step (/home/me/project/train.py:31)',
    });
    expect(stackSource([frame('<module>', '<ipython-input-3-1f2e>', 4)]).origin).toBe('code');
  });

  it('never takes a C++ symbol, an object file or the interpreter for your code', () => {
    for (const f of [...backward, interpreter]) expect(isUserFrame(f)).toBe(false);
    expect(isUserFrame(linear)).toBe(false);
    expect(isUserFrame(frame('<frozen runpy>', '<frozen runpy>', 1))).toBe(false);
    expect(isUserFrame(train)).toBe(true);
  });

  it('says a block made on the autograd engine thread was made during backward', () => {
    const source = stackSource(backward);
    expect(source.origin).toBe('backward');
    expect(source.text).toBe(
      "backward, on the autograd engine's thread (C++, no Python frame): MmBackward0",
    );
    expect(source.text).not.toMatch(/thread48|unwind|\?\?/);
  });

  it('says a C++ allocation with no Python frame is one, naming its operator', () => {
    expect(stackSource(allocator)).toEqual({
      origin: 'native',
      text: 'C++ with no Python frame: mm',
    });
    expect(stackSource([allocator[0]!]).text).toBe('C++ with no Python frame');
  });

  it("names the library's frame when the frames kept hold none of your code", () => {
    const deep = [...allocator, interpreter, linear, interpreter, qwen];
    expect(stackSource(deep)).toEqual({
      origin: 'library',
      text: `forward (${qwen.filename}:54), in a library: no frame of your own code in the stack`,
    });
    const cut = [...deep, ...Array.from({ length: MAX_STACK_FRAMES }, () => interpreter)].slice(
      0,
      MAX_STACK_FRAMES,
    );
    expect(stackSource(cut).text).toBe(
      `forward (${qwen.filename}:54), in a library: no frame of your own code in the ${MAX_STACK_FRAMES} innermost frames kept`,
    );
    // Only PyTorch's own Python: its frame, still not yours.
    expect(stackSource([...allocator, linear]).text).toMatch(
      /^forward \(.*linear\.py:125\), in a library/,
    );
  });

  it('says when there is no stack, and why there may be none', () => {
    expect(stackSource(undefined)).toEqual({ origin: 'none', text: '(no stack recorded)' });
    expect(stackSource(undefined, true).text).toBe('(no stack: live before the recording began)');
  });
});
