import { Writable } from 'node:stream';
import { inferenceServing } from '@allot/workloads';
import { describe, expect, it } from 'vitest';
import { ROWS } from './analysis/registry';
import { progressReporter } from './progress';
import { runWorkloads } from './run';

class Sink extends Writable {
  text = '';
  isTTY?: boolean;
  columns?: number;
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

describe('progressReporter', () => {
  it('draws on a terminal that reports 0 columns, or none', () => {
    for (const columns of [0, undefined, 5]) {
      const sink = new Sink();
      sink.isTTY = true;
      sink.columns = columns;
      const progress = progressReporter({ stream: sink as unknown as NodeJS.WriteStream });
      expect(() => {
        progress.update(1, 4, 'training × best-fit');
        progress.done();
      }).not.toThrow();
      expect(sink.text).toMatch(columns === 5 ? /^\r█/ : /1\/4/);
    }
  });

  it('counts a search of unknown length without claiming a total', () => {
    const tty = new Sink();
    tty.isTTY = true;
    tty.columns = 80;
    const onTerminal = progressReporter({ stream: tty as unknown as NodeJS.WriteStream });
    onTerminal.update(7, null, 'settings tried: defaults');
    expect(tty.text).toMatch(/^\r7 so far [\d.]+s settings tried: defaults/);
    expect(tty.text).not.toMatch(/█|░|\/60/);
    const log = new Sink();
    const inLog = progressReporter({ stream: log as unknown as NodeJS.WriteStream });
    inLog.update(1, null, 'settings tried: a');
    inLog.update(2, null, 'settings tried: b');
    expect(log.text.trim().split('\n')).toEqual([
      expect.stringMatching(/^\[1\] settings tried: a/),
      expect.stringMatching(/^\[2\] settings tried: b/),
    ]);
  });

  it('without a terminal, numbers each cell once', () => {
    const sink = new Sink();
    const progress = progressReporter({ stream: sink as unknown as NodeJS.WriteStream });
    const trace = inferenceServing({ requests: 3, seed: 1 });
    const inputs = ['a', 'b'].map((id) => ({ id, title: id, description: id, trace }));
    const rows = ROWS.filter((row) => row.name === 'best-fit' || row.name === 'buddy');
    runWorkloads(inputs, rows, null, progress.update);
    const lines = sink.text.trim().split('\n');
    expect(lines.map((line) => line.replace(/ \(.*\)$/, ''))).toEqual([
      '[1/4] a × best-fit',
      '[2/4] a × buddy',
      '[3/4] b × best-fit',
      '[4/4] b × buddy',
    ]);
  });
});
