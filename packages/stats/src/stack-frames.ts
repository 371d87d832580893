/**
 * Turns V8 stack text (`new Error().stack`) into PyTorch's frame dictionaries
 * (`{ filename, line, name }`), dropping the frames of this package's own recording code.
 */

/** One stack frame in PyTorch's snapshot format. */
export interface StackFrame {
  readonly filename: string;
  readonly line: number;
  readonly name: string;
}

/** Frames of the recording machinery itself, left out of exported stacks. */
const INTERNAL = /^(?:TraceBuffer|StatsAllocator)\.|^Object\.(?:allocate|free)$/;
const WITH_NAME = /^\s*at (?:async )?(.*?) \((.*):(\d+):\d+\)$/;
const WITHOUT_NAME = /^\s*at (?:async )?(.*):(\d+):\d+$/;

/** Parses a V8 stack into frames, innermost first. Lines it cannot read are skipped. */
export function parseStack(stack: string | undefined): StackFrame[] {
  if (!stack) return [];
  const frames: StackFrame[] = [];
  for (const line of stack.split('\n')) {
    let match = WITH_NAME.exec(line);
    if (match) {
      const name = match[1]!;
      if (INTERNAL.test(name)) continue;
      frames.push({ filename: match[2]!, line: Number(match[3]), name });
      continue;
    }
    match = WITHOUT_NAME.exec(line);
    if (match) frames.push({ filename: match[1]!, line: Number(match[2]), name: '<anonymous>' });
  }
  return frames;
}
