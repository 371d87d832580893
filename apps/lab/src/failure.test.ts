import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { EXIT_BUG, inputFailureMessage, reportFailure } from './failure';
import { EXIT_BAD_INPUT, UsageError } from './options';

function stderr(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk) => {
    text += chunk;
  });
  return { stream, text: () => text };
}

describe('reportFailure', () => {
  it('reports an input failure on one line, exit 2, the stack only with --debug', () => {
    const quiet = stderr();
    expect(reportFailure(new UsageError('bad\nvalue'), quiet.stream, false)).toBe(EXIT_BAD_INPUT);
    expect(quiet.text()).toBe('allot-lab: bad value\n');
    const debug = stderr();
    reportFailure(new UsageError('bad'), debug.stream, true);
    expect(debug.text()).toMatch(/^allot-lab: bad\n.*\n\s+at /s);
  });

  it('calls anything else a bug: exit 3, one line that says so', () => {
    const out = stderr();
    expect(reportFailure(new TypeError('x is undefined'), out.stream, false)).toBe(EXIT_BUG);
    expect(out.text()).toBe(
      'allot-lab: internal error, a bug in allot-lab: TypeError: x is undefined (run again with --debug for the stack)\n',
    );
  });

  it('names the path and the meaning of a file-system error', () => {
    const error = Object.assign(new Error('EACCES'), {
      code: 'EACCES',
      syscall: 'open',
      path: 'lab-report/index.html',
    });
    expect(inputFailureMessage(error)).toBe(
      'cannot write lab-report/index.html: permission denied (EACCES)',
    );
    expect(inputFailureMessage(new RangeError('Maximum call stack size exceeded'))).toMatch(
      /too large or too deeply nested/,
    );
    expect(inputFailureMessage(new Error('plain'))).toBeNull();
  });
});
