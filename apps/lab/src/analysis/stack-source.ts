/**
 * What made a block, read from its recorded stack (innermost frame first), for every answer that
 * names a source: who holds the memory, the groups two snapshots are compared by, the pool at an
 * event, the request an out-of-memory error names.
 *
 * ```
 *  a frame of your own Python code      ─► code:      `name (file:line)` of the innermost one
 *  Python frames, all of libraries      ─► library:   the innermost outside PyTorch (else PyTorch's),
 *                                                     saying that none of your code is in the stack
 *  no Python frame, the autograd engine ─► backward:  made on its thread during backward, and the
 *                                                     autograd node (MmBackward0) or operator
 *  no Python frame otherwise            ─► native:    C++, and its operator (at::_ops::NAME)
 *  no stack                             ─► none
 * ```
 *
 * Your own code is a Python source (`.py`, or an IPython cell) outside installed packages, PyTorch
 * and the standard library. A C++ symbol (`torch::unwind::unwind() (??:0)`), an object file
 * (`execute_native_thread_routine (thread48.o:0)`) or the interpreter's C (`ceval.c`) is never
 * named as a line of your code: a stack recorded with `stacks="all"` begins with a dozen of them.
 */
import { MAX_STACK_FRAMES, type StackFrame } from '@allot/workloads';

/** Where a block's stack leads (see the module comment). */
export type StackOrigin = 'code' | 'library' | 'backward' | 'native' | 'none';

/** What made a block: where its stack leads, and that in words (or the frame, `name (file:line)`). */
export interface StackSource {
  readonly origin: StackOrigin;
  readonly text: string;
}

/** A Python source file: `.py`, or a Jupyter/IPython cell. */
const PYTHON = /\.pyw?$|^<ipython-input-/;
/** Python that is not the program's own: installed packages, PyTorch, the standard library, `<frozen …>`. */
const LIBRARY =
  /(?:site-packages|dist-packages)[\\/]|[\\/]torch[\\/]|[\\/]lib[\\/]python\d|^<(?!ipython-input-)/;
const TORCH = /[\\/]torch[\\/]/;
/** The autograd engine's worker loop: a frame of it means the block was made during backward. */
const ENGINE = /\btorch::autograd::(?:python::Python)?Engine::/;
/** An autograd node's `apply`: which backward function made the block. */
const NODE = /\btorch::autograd::generated::(\w+)::apply\b/;
/** An ATen operator's entry: which operator made the block. */
const OPERATOR = /\bat::_ops::(\w+)::(?:call|redispatch)\b/;

/** Whether `frame` is Python (see {@link PYTHON}). */
export function isPythonFrame(frame: StackFrame): boolean {
  return PYTHON.test(frame.filename);
}

/** Whether `frame` is the program's own code: Python outside libraries (see the module comment). */
export function isUserFrame(frame: StackFrame): boolean {
  return isPythonFrame(frame) && !LIBRARY.test(frame.filename);
}

/** The innermost frame of the program's own code, or undefined when the stack holds none. */
export function userFrame(frames: readonly StackFrame[]): StackFrame | undefined {
  return frames.find(isUserFrame);
}

/** `name (file:line)`. */
export function frameText(frame: StackFrame): string {
  return `${frame.name} (${frame.filename}:${frame.line})`;
}

/** The first capture of `pattern` in the innermost frame whose name has one. */
function firstName(frames: readonly StackFrame[], pattern: RegExp): string | undefined {
  for (const frame of frames) {
    const found = pattern.exec(frame.name);
    if (found) return found[1];
  }
  return undefined;
}

/**
 * What made a block whose stack is `frames` (see the module comment); `beforeWindow`: the block was
 * live before the recording began (its absence of a stack then says so).
 */
export function stackSource(
  frames: readonly StackFrame[] | undefined,
  beforeWindow = false,
): StackSource {
  if (frames === undefined || frames.length === 0) {
    return {
      origin: 'none',
      text: beforeWindow ? '(no stack: live before the recording began)' : '(no stack recorded)',
    };
  }
  const own = userFrame(frames);
  if (own !== undefined) return { origin: 'code', text: frameText(own) };
  const where =
    frames.length >= MAX_STACK_FRAMES
      ? `in the ${MAX_STACK_FRAMES} innermost frames kept`
      : 'in the stack';
  const python = frames.filter(isPythonFrame);
  if (python.length > 0) {
    const shown = python.find((frame) => !TORCH.test(frame.filename)) ?? python[0]!;
    return {
      origin: 'library',
      text: `${frameText(shown)}, in a library: no frame of your own code ${where}`,
    };
  }
  const operator = firstName(frames, OPERATOR);
  if (frames.some((frame) => ENGINE.test(frame.name))) {
    const node = firstName(frames, NODE) ?? operator;
    return {
      origin: 'backward',
      text: `backward, on the autograd engine's thread (C++, no Python frame)${node ? `: ${node}` : ''}`,
    };
  }
  const kept = frames.length >= MAX_STACK_FRAMES ? ` ${where}` : '';
  return {
    origin: 'native',
    text: `C++ with no Python frame${kept}${operator ? `: ${operator}` : ''}`,
  };
}
